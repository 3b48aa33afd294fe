"""The iteration order of the JVM maps Kafka serializes into znode JSON.

Kafka writes znode JSON with Jackson (``kafka.utils.Json.encodeAsBytes``) from Scala and Java
maps, so the key order of the bytes is the iteration order of whichever map Kafka built:

* ``scala.collection.immutable.Map`` literals of 1-4 entries (``Map1``..``Map4``) keep
  insertion order; from 5 entries it is a CHAMP ``HashMap`` (Scala 2.13), ordered by the
  5-bit fragments of the *improved* hash (``scala.collection.Hashing.improve``), payload of
  a trie node before its sub-nodes.
* ``scala.collection.mutable.HashMap`` (2.13): buckets ``improved & (n - 1)`` with
  ``improved = h ^ (h >>> 16)``, each bucket sorted by the improved hash (signed); the table
  starts at 16 (or sized for a ``mutable.Map(...)`` literal) and doubles when ``size + 1 >= 0.75 * n`` before an insert.
* ``java.util.Properties`` (a ``ConcurrentHashMap`` inside, Java 9+): bins
  ``spread(h) & (n - 1)`` with ``spread = (h ^ (h >>> 16)) & 0x7fffffff``, a bin keeps
  insertion order until a resize splits it (``transfer``: the tail run stays, the nodes
  before it are prepended to the lo/hi lists, which reverses them); 16 bins, resized to
  2n when the count reaches 0.75 n.

Every function here was checked against Kafka 3.9.1's own ``ZkData`` output (Scala 2.13.15,
JDK 17; see tests/unit/cluster/test_znodes.py).  Keys are ``str`` (``String.hashCode``) or ``int``
(``Integer.hashCode`` is the value).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from wire.java_hash import java_string_hash

__all__ = [
    "java_hash",
    "java_properties_order",
    "scala_immutable_map_order",
    "scala_mutable_hashmap_order",
]

_MASK = 0xFFFFFFFF


def _signed(x: int) -> int:
    x &= _MASK
    return x - 0x1_0000_0000 if x & 0x8000_0000 else x


def java_hash(key: str | int) -> int:
    """``key.hashCode()`` as the JVM computes it (signed 32-bit)."""
    if isinstance(key, int):
        return _signed(key)
    return java_string_hash(key)


def _urshift(x: int, n: int) -> int:
    return (x & _MASK) >> n


def _scala_improve(hcode: int) -> int:
    # scala.collection.Hashing.improve, in 32-bit wrapping arithmetic.
    h = (hcode + ~(hcode << 9)) & _MASK
    h ^= _urshift(h, 14)
    h = (h + (h << 4)) & _MASK
    h ^= _urshift(h, 10)
    return h & _MASK


def scala_immutable_map_order(keys: Sequence[str | int]) -> list[str | int]:
    """Iteration order of a Scala 2.13 immutable ``Map`` built by adding ``keys`` in order."""
    if len(keys) <= 4:
        return list(dict.fromkeys(keys))
    return _champ_order(list(dict.fromkeys(keys)), 0)


def _champ_order(keys: list[str | int], shift: int) -> list[str | int]:
    # One CHAMP node: fragments holding exactly one key are payload (emitted first, by
    # fragment); fragments shared by several keys become sub-nodes (emitted after, by fragment).
    if shift >= 32:
        return keys  # a collision node keeps insertion order
    by_fragment: dict[int, list[str | int]] = {}
    for k in keys:
        by_fragment.setdefault((_scala_improve(java_hash(k)) >> shift) & 0x1F, []).append(k)
    payload = [ks[0] for _, ks in sorted(by_fragment.items()) if len(ks) == 1]
    out = list(payload)
    for _, ks in sorted(by_fragment.items()):
        if len(ks) > 1:
            out.extend(_champ_order(ks, shift + 5))
    return out


def scala_mutable_hashmap_order(
    keys: Iterable[str | int], literal_size: int = 0
) -> list[str | int]:
    """Iteration order of a Scala 2.13 ``mutable.HashMap`` after ``+=`` of ``keys`` in order.

    ``literal_size``: the map was made by ``mutable.Map(k1 -> v1, ..., kN -> vN)`` with these
    N first keys; ``HashMap.from`` then sizes the table for them (capacity
    ``(N + 1) / 0.75``, rounded by ``tableSizeFor``) instead of the default 16.
    """
    unique = list(dict.fromkeys(keys))
    n = 16
    if literal_size > 0:
        cap = int((literal_size + 1) / 0.75)
        n = min(_highest_one_bit(max(cap - 1, 4)) * 2, 1 << 30)
    threshold = int(n * 0.75)
    for size in range(len(unique)):
        if size + 1 >= threshold:
            n *= 2
            threshold = int(n * 0.75)
    improved = {}
    for k in unique:
        h = java_hash(k)
        improved[k] = _signed(h ^ _urshift(h, 16))
    return sorted(unique, key=lambda k: (improved[k] & (n - 1), improved[k]))


def _highest_one_bit(x: int) -> int:
    return 1 << (x.bit_length() - 1)


def java_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of ``java.util.Properties`` after ``setProperty`` of ``keys`` in order."""
    n = 16
    table: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    count = 0
    for k in keys:
        h = java_hash(k)
        spread = (h ^ _urshift(h, 16)) & 0x7FFFFFFF
        bin_ = table[spread & (n - 1)]
        if any(key == k for _, key in bin_):
            continue
        bin_.append((spread, k))
        count += 1
        if count >= n - (n >> 2):
            table = _chm_transfer(table, n)
            n *= 2
    return [k for bin_ in table for _, k in bin_]


def _chm_transfer(table: list[list[tuple[int, str]]], n: int) -> list[list[tuple[int, str]]]:
    # ConcurrentHashMap.transfer for list bins: the longest tail run whose (hash & n) bit is
    # the same moves as is; every node before it is prepended to its lo or hi list.
    new: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
    for i, bin_ in enumerate(table):
        if not bin_:
            continue
        last_run = 0
        run_bit = bin_[0][0] & n
        for j in range(1, len(bin_)):
            b = bin_[j][0] & n
            if b != run_bit:
                run_bit, last_run = b, j
        lo: list[tuple[int, str]] = []
        hi: list[tuple[int, str]] = []
        if run_bit == 0:
            lo = list(bin_[last_run:])
        else:
            hi = list(bin_[last_run:])
        for node in bin_[:last_run]:
            if node[0] & n == 0:
                lo.insert(0, node)
            else:
                hi.insert(0, node)
        new[i], new[i + n] = lo, hi
    return new
