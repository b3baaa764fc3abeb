"""The wire codec of the code sandbox: values cross its boundary (a call's arguments in, its return
value out) as flat JSON token lists (:func:`encode_value`, :func:`decode_value`): no nesting, so a
value nested thousands of levels deep travels as well as a flat one, and large integers in
hexadecimal, which converts in linear time and under no digit limit.

Standard library only: fade imports this module (to send a test's arguments, to read a return
value), and the supervisor loads it from this file's path inside the sandbox, where nothing but the
standard library is on ``sys.path``.
"""

import math
import re


def harness_input(test, options):
    """A test's harness input as the job carries it: a call's arguments as tokens
    (:func:`encode_value`, typed as ``options`` say). ValueError when they cannot be carried."""
    if "args" not in test:
        return test
    try:
        return {**test, "args": encode_value(test["args"], options.typed, opaque=False)}
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"a call's arguments cannot be sent to the sandbox: {exc}") from None


#: Integers up to this many bits travel as JSON numbers (at most 603 digits, under the lowest digit
#: limit ``sys.set_int_max_str_digits`` accepts); larger ones in hexadecimal.
JSON_INT_BITS = 2000
# A marker is a one-key object: the key says what it is. Containers: its count of items.
_CONTAINERS = {"L": "list", "T": "tuple", "S": "set", "F": "frozenset", "D": "dict"}
_KIND = {kind: key for key, kind in _CONTAINERS.items()}
_HEX = re.compile(r"-?0x[0-9a-f]+", re.ASCII)
_END = object()


def encode_value(value, typed, *, opaque=True):
    """``value`` as a flat list of JSON tokens in prefix order, which :func:`decode_value` turns
    back into the value: a scalar (None, a bool, a str, an int of at most :data:`JSON_INT_BITS`
    bits, a finite float) is its own token; anything else is a one-key marker object: ``{"I":
    hex}`` (a larger int), ``{"R": "inf" | "-inf" | "nan"}``, ``{"O": [type name, repr]}`` (an
    opaque object), or a container's ``{"L" | "T" | "S" | "F" | "D": count}`` (list, tuple, set,
    frozenset, dict) followed by its items (a dict's keys and values in turn).

    ``typed``: tuples, sets, a dict's keys and numpy scalars are kept as Python has them (the
    harnesses that compare return values with ``==``), and any other object becomes an opaque
    ``object`` (``opaque``; else TypeError). Otherwise the value is read as ``json.dumps`` then
    ``json.loads`` would read it (fade's rules): tuples become lists, a dict's keys strings, and
    anything JSON does not hold raises TypeError. A circular structure raises ValueError."""
    tokens = []
    open_ids = set()
    stack = [(iter((value,)), None)]
    while stack:
        items, owner = stack[-1]
        item = next(items, _END)
        if item is _END:
            stack.pop()
            open_ids.discard(owner)
            continue
        children = _token(item, typed, opaque, tokens)
        if children is not None:
            if id(item) in open_ids:
                raise ValueError("a circular reference")
            open_ids.add(id(item))
            stack.append((iter(children), id(item)))
    return tokens


def _token(item, typed, opaque, tokens):
    """Append ``item``'s token; return the items that follow it (a container's), else None."""
    if item is None or item is True or item is False:
        tokens.append(item)
    elif isinstance(item, str):
        tokens.append(str.__str__(item))
    elif isinstance(item, int):
        number = int.__index__(item)
        tokens.append(number if number.bit_length() <= JSON_INT_BITS else {"I": hex(number)})
    elif isinstance(item, float):
        number = float.__float__(item)
        tokens.append(number if math.isfinite(number) else {"R": repr(number)})
    elif isinstance(item, list) or (isinstance(item, tuple) and not typed):
        children = list(item)
        tokens.append({"L": len(children)})
        if _own_tokens(children):
            tokens.extend(children)
            return None
        return children
    elif isinstance(item, dict):
        pairs = list(item.items())
        tokens.append({"D": len(pairs)})
        return [x for k, v in pairs for x in (k if typed else _json_key(k), v)]
    elif typed and isinstance(item, (tuple, set, frozenset)):
        children = list(item)
        kind = "tuple" if isinstance(item, tuple) else "frozenset" if isinstance(item, frozenset) else "set"
        tokens.append({_KIND[kind]: len(children)})
        return children
    elif typed and type(item).__module__ == "numpy" and getattr(item, "ndim", None) == 0 and hasattr(item, "item"):
        return _token(item.item(), typed, opaque, tokens)  # a numpy scalar compares with == as its Python value
    elif typed and opaque:
        try:
            text = repr(item)[:1000]
        except BaseException:
            text = f"<a {type(item).__name__} whose repr fails>"
        tokens.append({"O": [type(item).__name__, text]})
    else:
        raise TypeError(f"a {type(item).__name__} is not JSON")
    return None


def _own_tokens(items):
    """Whether every item is a scalar of one kind that is its own token (a fast path for the
    common flat lists: C-speed checks instead of a step per item)."""
    kinds = set(map(type, items))
    if len(kinds) != 1:
        return not kinds
    (kind,) = kinds
    if kind is int:
        return max(max(items).bit_length(), min(items).bit_length()) <= JSON_INT_BITS
    if kind is float:
        return all(map(math.isfinite, items))
    return kind is str or kind is bool or kind is type(None)


def _json_key(key):
    # json.dumps's conversion of a dict key, in its order of checks.
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, float):
        number = float.__float__(key)
        return float.__repr__(number) if math.isfinite(number) else {"inf": "Infinity", "-inf": "-Infinity"}.get(
            repr(number), "NaN")
    if key is True or key is False or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


class Opaque:
    """A value that came back as an ``object`` token: equal to nothing (not even itself), shown
    by its repr."""

    def __init__(self, type_name, text):
        self.type_name, self.text = type_name, text

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return self.text


def decode_value(tokens):
    """The value :func:`encode_value` made ``tokens`` from; ValueError, naming what is wrong, for
    anything it does not make. A set or dict whose items cannot be hashed again (an item nested
    past the recursion limit) comes back :class:`Opaque`."""
    if not isinstance(tokens, list) or not tokens:
        raise ValueError(f"a value's tokens must be a non-empty list, got {type(tokens).__name__}")
    root = []
    stack = [[None, 1, root]]  # [kind, items still to come, items so far]
    for position, token in enumerate(tokens):
        if not stack:
            raise ValueError(f"{len(tokens) - position} tokens after the value's end")
        key, count = _marker(token)
        kind = _CONTAINERS.get(key)
        if kind is not None:
            if type(count) is not int or count < 0:
                raise ValueError(f"a {kind}'s count must be a non-negative integer, got {count!r}")
            count *= 2 if kind == "dict" else 1
            if count > len(tokens) - position - 1:
                raise ValueError(f"a {kind} of {count} items where {len(tokens) - position - 1} tokens are left")
            if count:
                stack.append([kind, count, []])
                continue
            value = _container(kind, [])
        else:
            value = _scalar(token)
        while True:  # place the value; close every container it completes
            frame = stack[-1]
            frame[2].append(value)
            frame[1] -= 1
            if frame[1]:
                break
            stack.pop()
            if frame[0] is None:
                break
            value = _container(frame[0], frame[2])
    if stack:
        raise ValueError("the tokens end inside a container")
    return root[0]


def _marker(token):
    """A marker's key and value; (None, None) for a scalar."""
    if not isinstance(token, dict):
        return None, None
    if len(token) != 1:
        raise ValueError(f"a marker holds {len(token)} keys, expected one")
    return next(iter(token.items()))


def _scalar(token):
    if token is None or isinstance(token, (bool, str)):
        return token
    if type(token) is int:
        return token
    if type(token) is float:
        if not math.isfinite(token):
            raise ValueError(f"a non-finite float as a bare token ({token!r}): the harness marks those")
        return token
    key, value = _marker(token)
    if key == "I":
        if not isinstance(value, str) or not _HEX.fullmatch(value):
            raise ValueError(f"an int marker's value must be hexadecimal, got {str(value)[:40]!r}")
        return int(value, 16)
    if key == "R":
        if value not in ("inf", "-inf", "nan"):
            raise ValueError(f"a float marker's value must be inf, -inf or nan, got {str(value)[:40]!r}")
        return float(value)
    if key == "O":
        if not (isinstance(value, list) and len(value) == 2 and all(isinstance(x, str) for x in value)):
            raise ValueError("an object marker's value must be its type's name and its repr")
        return Opaque(*value)
    raise ValueError(f"a token that is no value: {str(token)[:80]}")


def _container(kind, items):
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    try:
        if kind == "dict":
            return dict(zip(items[::2], items[1::2]))
        return set(items) if kind == "set" else frozenset(items)
    except (TypeError, RecursionError):
        return Opaque(kind, f"<a {kind} whose items cannot be hashed here>")
