r"""Save and load learners, and the checkpoints of a replay, without pickle.

A saved learner is **one** ``.npz`` archive (``numpy.savez``) that holds

- every numpy array of the learner's declared state, under the names ``a0``, ``a1``, ...; the
  trailing all-zero rows of an array (the spare capacity of the doubling buffers) are not
  written but restored as zeros on loading, so the file grows with the samples seen, not with
  the capacity;
- a JSON document in the 0-d unicode array ``__okoco__`` with the format name
  (``"okoco-model"``), the format version, the okoco version that wrote it, the class's stable
  name (``"KONS"``), the constructor parameters and the rest of the declared
  state (floats, counters, feature names, the random generator's ``bit_generator.state``), where
  each array is a reference ``{"__array__": "a3"}`` (or ``{"__padded__": "a3", "rows": 512}``
  when the archive holds only the leading rows of an array of 512 rows).

**The model, not its buffers.** A file holds what defines the model: its points,
coefficients, weights, dictionary, counters, generator state and parameters. What is computed
from them, the factorizations (a windowed KONS's inverse :math:`(\bar K_I + \alpha I)^{-1}`
and its pending rank-16 terms, Sketched-KONS's KORS inverse in the same array, the unbounded
KONS's Cholesky factor; the matrices of PROS-N-KONS's and Auto's embeddings, KORS's factor
and KRLS's ALD matrix; the multiclass KONS's shared inverse), is declared ``rebuilt`` and left
out, and rebuilt on load from the model by its owner's ``_rebuild`` hook (a class attribute
``_rebuilt_parts``, or a property where it depends on the state, names the parts whose
``rebuilt`` fields it rebuilds, by their paths in the file, all of them or, as a mapping
``{"cholesky": ("factor",)}``, those named). A ``rebuilt`` field that no hook rebuilt is
refused (``None`` where the compiled core needs an array). The loaded learner is the
same model: its predictions and its next steps equal the saved learner's up to rounding
(1e-9 relative; a rebuilt inverse is exact where the saved one had accumulated the rounding of
its updates). Replay checkpoints keep those fields (a resume is bit for bit the run), and a
file of format 9 or older holds them too: they are then used as saved, as an optional cache.
What a rebuild allocates is bounded by the file's size too (squares of side ``size / 8``).

**Stable class names.** A file names each class by the name it was registered with
(:func:`register`; its ``__qualname__`` by default: ``"KONS"``, ``"SlotInverse"``), so moving a
class to another module changes no file; the module paths of the files before format 10 are
mapped by ``okoco.persistence._migrations.LEGACY_CLASS_PATHS``.

Loading reads the archive with ``allow_pickle=False`` and builds objects only from an
allow-list: the classes registered with :func:`register` (the okoco learners and their parts:
feature map, point store, factorizations, dictionaries, step-size policy), kernels and losses
rebuilt *by name and parameters* through their constructors, numpy bit generators by name, and
(for replay checkpoints and pipelines only) river's metrics, statistics, ``StandardScaler``,
``TargetStandardScaler`` and the encoders of text features (``OneHotEncoder``,
``FeatureHasher``, ``Discard``; pipelines and ``TransformerUnion`` are held by structure).
okoco's own scalers and metrics (:mod:`okoco.preprocessing`, :mod:`okoco.metrics`) are
registered like the learners; a checkpoint written with river's
counterparts resumes into them (each declares its ``_river_class`` and converts that state with
``_state_from_river``). Nothing in a file can name any other class or any function, so loading
never runs code from the file. A learner holding
something outside the list (a user's own kernel or loss class, a callable step size) cannot be
saved: :func:`save` raises a ``TypeError`` that names the attribute.

Declared state
--------------
Every class a file may hold declares its state in a class attribute ``_saved_state``: a dict from
attribute name to a spec string (plain data, so classes below this module declare it without
importing it; a subclass's dict extends its bases', and ``None`` drops an inherited entry)::

    _saved_state = {"_cap": "int[0,] as capacity", "_m": "int[0,capacity] as size",
                    "_L": "rebuilt array(capacity * (capacity + 1) // 2) float64 as factor",
                    "_cache": "cache:None"}

A spec is ``[opt|rebuilt] KIND[|KIND...] [as FIELD]`` or ``cache[:None|:{}|:lock]``. ``opt``:
the attribute may be absent (a class default stands in); ``rebuilt``: computed from the model,
left out of a model file when an owner rebuilds it (see above; ``None`` until its hook runs,
and the object's invariants that name it are checked after); ``as FIELD``: the field's stable
public name in the file (a public attribute's own name by default; a private attribute must
declare one, so that no file holds a private name and renaming an attribute never changes the
format); ``cache``: never saved, and set on loading to ``None``,
``{}`` or a new ``threading.Lock`` (or left to the class default). A KIND is ``int``,
``int[LO,HI]``, ``float`` (a Python float), ``number`` (an int or a float: a parameter as given),
``bool``, ``str``, ``none``, ``rng`` (a numpy Generator), ``kernel``, ``loss``, ``obj`` (an
object of a class that declares its own state; ``obj:Rows,ExpertRows`` of those classes only),
``plain`` (nested lists, tuples, dicts and sets of None, bool, int, float, str, bytes: feature
names, labels), ``river`` (one of river's statistics, in checkpoints), ``list[KIND]``,
``dict[KIND]`` (values; keys are plain) or ``array(SHAPE) DTYPE``. A SHAPE has one rule per axis:
an integer expression (``+ - * //``, parentheses, ``min``/``max``) of the object's int fields
(``size``), of an int field of a field (``cholesky.size``, ``store.n``), all named as in the
file, or of a free symbol (any other name, equal wherever it appears in the object), optionally
prefixed by ``>=`` (a capacity), or ``*`` (any length).

:func:`save` writes exactly the declared fields, in a file of at most a few times their size;
state a class does not declare is a ``TypeError`` naming the attributes (declare a new attribute
before it can be saved). :func:`load` checks every field against its declaration before the
object is built and raises a ``ValueError`` naming the field (``state.cholesky.factor must be
array(capacity * (capacity + 1) // 2) float64, got ...``); a field the class does not declare is
refused. The fields of each object are then checked *together*, before the compiled core sees
them, against the cross-field invariants of its class (``okoco.persistence._invariants``: a
size against the arrays it describes, indices in range, a one-to-one column map, spare rows
zero, the features covering the stored points), and every float of a learner's state (and of
a model file's river statistics) must be finite, but the diagnostics of the latest step
(``last_residual``, ...): an edited file is refused, never loaded as another model. The JSON
may not hold ``NaN``, ``Infinity`` or an overflowing number (okoco writes a non-finite float
as ``{"__float__": "nan"}``).

Reading a file holds the cyclic garbage collector off (``_archive.collector_paused``): a
collection started by the containers a load builds would cost the whole heap's size, 80-160 ms
in a process that imported river, for a file whose own checks take milliseconds.

Loading is bounded by the file: an archive of more members than its metadata refers to is
refused before its zip directory is read (from the zip's end record and its first member, the
metadata), archive members are read only when the metadata refers to them
(each once, and a member nobody refers to is refused), each ``.npy`` header is checked before
its data is allocated, and what arrays, padded buffers and metadata may allocate is at most
``MAX_EXPANSION`` times the file's size plus 8 MiB; the metadata's nesting (40 levels) and number
of JSON containers (200,000) are bounded and error messages are cut to 600 characters.

Versioning: ``FORMAT_VERSION`` is bumped whenever the layout of the file or the saved model of
a learner changes (a factorization's layout is not in the file: changing it needs no bump);
:func:`load` reads the versions in ``SUPPORTED_VERSIONS`` and refuses any other with a
``ValueError`` naming the version found and the versions supported. Every migration of an older
file is in one module, ``okoco.persistence._migrations`` (its docstring lists what each
version changed). A damaged file (cut short, edited, an entry missing or of the
wrong kind) raises one ``ValueError`` that names the file and what is wrong.

Layering: this module sits *below* the learners and knows none of them. The layers that define
savable classes register them (``okoco.learners`` registers the learners and the parts they are
built from when it is imported), so a learner's ``save`` method calls :func:`save` through an
ordinary import and no module imports a layer above it.

Examples
--------
>>> import os, tempfile
>>> import okoco
>>> from okoco.learners import KONS
>>> model = KONS(C=2.0)
>>> for i in range(20):
...     model.learn_one({"x": i / 20}, (i % 3) - 1.0)
>>> path = os.path.join(tempfile.mkdtemp(), "kons.npz")
>>> _ = model.save(path)
>>> again = okoco.load(path)
>>> abs(again.predict_one({"x": 0.3}) - model.predict_one({"x": 0.3})) < 1e-12
True
>>> again.learn_one({"x": 0.5}, 1.0); model.learn_one({"x": 0.5}, 1.0)
>>> abs(again.predict_one({"x": 0.7}) - model.predict_one({"x": 0.7})) < 1e-12
True
"""

# the private names are the parts okoco.pipelines builds its river-model files from
from okoco.persistence._archive import _Archive, _Damaged, _read, _write  # noqa: F401
from okoco.persistence._checkpoints import (  # noqa: F401
    _capture,
    _rebuilt,
    check_checkpointable,
    load_checkpoint,
    save_checkpoint,
)
from okoco.persistence._decode import _Decoder  # noqa: F401
from okoco.persistence._encode import _Encoder  # noqa: F401
from okoco.persistence._format import (  # noqa: F401
    CHECKPOINT_FORMAT_NAME,
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_EXPANSION,
    META_KEY,
    SUPPORTED_VERSIONS,
    _version,
)
from okoco.persistence._learners import _load_learner, load, read_metadata, save  # noqa: F401
from okoco.persistence._registry import (  # noqa: F401
    _LEARNERS,
    _OBJECTS,
    _RIVER_PIPELINE,
    _class_path,
    _init_params,
    _is_wrapper,
    _resolve,
    register,
    registered,
    registered_name,
)
from okoco.persistence._schema import declared_state

__all__ = ["save", "load", "read_metadata", "register", "registered", "registered_name",
           "declared_state",
           "check_checkpointable", "save_checkpoint", "load_checkpoint", "FORMAT_NAME",
           "CHECKPOINT_FORMAT_NAME", "FORMAT_VERSION", "SUPPORTED_VERSIONS", "META_KEY",
           "MAX_EXPANSION"]
