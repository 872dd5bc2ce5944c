"""Griffe extension: render the reStructuredText the docstrings use as Markdown for mkdocstrings.

okoco's docstrings are numpy-style with Sphinx roles, which read well in ``help()`` and in
editors. mkdocstrings renders Markdown, so this rewrites, in every docstring it loads:

- ``:math:`x``` into ``\\(x\\)`` and a ``.. math::`` block into ``\\[ ... \\]`` (MathJax, through
  ``pymdownx.arithmatex``);
- ``:class:`~a.b.C``` into ``C`` and ``:func:`a.b``` into ``a.b`` as inline code, for every
  cross-reference role (class, func, meth, attr, mod, data, exc, obj);
- the reST literal ````x```` into the Markdown literal ```x```.
"""

from __future__ import annotations

import re
import textwrap

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj):`(~?)([^`]+)`")
_MATH = re.compile(r":math:`([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_MATH_BLOCK = re.compile(r"^( *)\.\. math::[ \t]*(.*)\n((?:\1 {2,}.*\n|[ \t]*\n)*)", re.M)


def _math_block(match: re.Match) -> str:
    indent, first, rest = match.groups()
    body = (first.strip() + "\n" + textwrap.dedent(rest)).strip("\n")
    return f"{indent}\\[\n{textwrap.indent(body, indent)}\n{indent}\\]\n\n"


def _role(match: re.Match) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def to_markdown(text: str) -> str:
    """The docstring ``text`` with its reST roles, literals and math blocks in Markdown."""
    text = _MATH_BLOCK.sub(_math_block, text if text.endswith("\n") else text + "\n")
    text = _MATH.sub(lambda m: f"\\({m.group(1)}\\)", text)
    text = _ROLE.sub(_role, text)
    return _LITERAL.sub(r"`\1`", text).rstrip("\n")


class RstRoles(griffe.Extension):
    """Rewrite each loaded object's docstring with :func:`to_markdown`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
