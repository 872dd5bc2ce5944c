# KORS's estimate of a point's ridge leverage and its inclusion probability (Calandriello,
# Lazaric & Valko 2017, Eq. 4), as an inline function: its one definition, which every compiled
# step that draws KORS's coin cimports (okoco.dictionary.KORS, Sketched-KONS, PROS-N-KONS).


cdef inline double kors_probability(double k_diag, double explained, double alpha, double eps,
                                    double beta, double p_min, double* q,
                                    double* tau) noexcept nogil:
    """The inclusion probability ``p = max(min(beta tau, 1), p_min)`` of a point whose kernel
    diagonal is ``k_diag`` and whose part explained by the (weighted) atoms is ``explained``:
    the regularized residual ``q = max(k_diag - explained, 0) / alpha`` and the leverage
    estimate ``tau = (1 + eps) q / (1 + q)`` are written to ``q`` and ``tau``."""
    cdef double r = k_diag - explained, p
    q[0] = (r if r > 0.0 else 0.0) / alpha
    tau[0] = (1.0 + eps) * q[0] / (1.0 + q[0])
    p = beta * tau[0]
    p = 1.0 if p > 1.0 else p
    return p_min if p_min > p else p
