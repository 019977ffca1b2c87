r"""Kubernetes name rules for definitions, components and labels.

Every rule matches the WHOLE string (``re.fullmatch``): ``$`` alone also matches before a
trailing newline, so ``"x\n"`` would pass a ``^...$`` pattern with ``re.match``.

Sources (Kubernetes "Object Names and IDs",
https://kubernetes.io/docs/concepts/overview/working-with-objects/names/, and "Labels and
Selectors", https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/):

* DNS-1123 subdomain (object names such as a Karta's ``metadata.name``): at most 253
  characters, lowercase alphanumerics, ``-`` and ``.``, starting and ending alphanumeric;
* DNS-1123 label (component names, which become parts of other names): at most 63
  characters, lowercase alphanumerics and ``-``, starting and ending alphanumeric;
* label key: optional DNS-subdomain prefix and ``/``, then a name of 1-63 alphanumerics,
  ``-``, ``_``, ``.``, starting and ending alphanumeric; label value: empty or the same
  syntax as the name part;
* annotation key: a label key once lower-cased (Kubernetes checks ``strings.ToLower(key)``);
  the keys and values of one object's annotations total at most 256 KiB (UTF-8 bytes).

Unicode format characters (category ``Cf``: bidi overrides such as U+202E, zero-width
joiners) are named explicitly in the reason, since they make a name read differently
from what it is.
"""

from __future__ import annotations

import re
import unicodedata

_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", re.ASCII)
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", re.ASCII)
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII)

DNS_SUBDOMAIN_MAX = 253
DNS_LABEL_MAX = 63
LABEL_NAME_MAX = 63
ANNOTATIONS_MAX_BYTES = 256 * 1024
"""Kubernetes' TotalAnnotationSizeLimitB: keys and values of one object's annotations."""


def format_character(value: str) -> str | None:
    """The first Unicode format character (category ``Cf``) of ``value`` as ``U+XXXX``, or None."""
    for char in value:
        if unicodedata.category(char) == "Cf":
            return f"U+{ord(char):04X}"
    return None


def hidden_problem(value: str) -> str | None:
    """A reason for control or format characters in ``value``, or None (kinds, groups, aliases too)."""
    found = format_character(value)
    if found is not None:
        return f"contains the invisible format character {found} (bidi controls and other format characters " \
               "are not allowed)"
    if any(unicodedata.category(c) == "Cc" for c in value):
        return "contains a control character (such as a newline)"
    return None


def dns_subdomain_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain (<= 253 characters), or None when it is."""
    hidden = hidden_problem(value)
    if hidden:
        return hidden
    if len(value) > DNS_SUBDOMAIN_MAX:
        return f"must be at most {DNS_SUBDOMAIN_MAX} characters, got {len(value)}"
    if not _DNS_SUBDOMAIN.fullmatch(value):
        return ("must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a "
                "letter or digit")
    return None


def dns_label_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 label (<= 63 characters), or None when it is."""
    hidden = hidden_problem(value)
    if hidden:
        return hidden
    if len(value) > DNS_LABEL_MAX:
        return f"must be at most {DNS_LABEL_MAX} characters, got {len(value)}"
    if not _DNS_LABEL.fullmatch(value):
        return "must be a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit"
    return None


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid Kubernetes label key, or ``None`` when it is."""
    hidden = hidden_problem(key)
    if hidden:
        return hidden
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > DNS_SUBDOMAIN_MAX or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return "prefix part must be a lowercase DNS subdomain"
    if not name or len(name) > LABEL_NAME_MAX or not _LABEL_NAME.fullmatch(name):
        return "name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value (empty is valid), or None when it is."""
    hidden = hidden_problem(value)
    if hidden:
        return hidden
    if value and (len(value) > LABEL_NAME_MAX or not _LABEL_NAME.fullmatch(value)):
        return "not a valid label value (at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)"
    return None


def annotation_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid annotation key (a label key once lower-cased), or None."""
    return label_key_problem(key.lower())


def annotations_size_problem(annotations: dict[str, str]) -> str | None:
    """Why ``annotations`` (one object's whole map) is too large, or None.

    The size is the UTF-8 bytes of every key and value, as Kubernetes counts it.
    """
    size = sum(len(k.encode("utf-8", "surrogatepass")) + len(str(v).encode("utf-8", "surrogatepass"))
               for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        return f"must total at most {ANNOTATIONS_MAX_BYTES} bytes (256 KiB) of keys and values, got {size}"
    return None
