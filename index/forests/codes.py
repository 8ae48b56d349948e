"""Integer codes for OI-tree nodes: the paper's scheme (Zhou et al. 4.2) and a compact one.

Both answer "can an order instance pass through node ``a`` and later through node ``b``?"
(``b`` descends from ``a`` once every virtual node is expanded into its child tree) from
codes alone, as a membership test of ``b``'s code in ``a``'s descendant code ranges.

**Paper scheme.** Each tree is padded to a complete f-tree (f its fanout); a node's local
relative value is its breadth-first position there (child ``j`` of ``v`` is ``f*v+1+j``).
A node's code is its relative value plus a base value that starts at the tree root's code
and, walking breadth-first, jumps to the largest code inside every virtual node passed.
Codes grow like fanout**depth: they are exact Python ints here.

Descendants of relative value ``v`` ``k`` levels down (the corrected Lemma 2) fill the
relative range ``[f**k*v + (f**k-1)/(f-1), f**k*v + (f**k-1)/(f-1) + f**k - 1]``; the paper
prints ``f*v+f+1``-style lower bounds that miss nodes for ``k >= 2``. Ancestors (the
corrected Lemma 3) are the iterated parents ``(v-1) // f``, not ``(v-1) // f**k``. Each
range maps to codes through the base values. A node inside a child tree also precedes
everything the tree's virtual node precedes in the parent tree, so the ranges of every
enclosing tree are added.

**Compact scheme.** Codes are pre-order ranks of the forest with every virtual node
replaced by its child tree (the virtual node and the child's root share a code), so codes
are bounded by the number of nodes. A node's descendants are one range per nesting level:
its own subtree, then, for each enclosing tree, what follows that tree inside its virtual
node's subtree.

>>> from uncertain_cep.index.forests.oi_tree import plan_group
>>> from uncertain_cep.index.forests.forest_builder import build_forest
>>> forest = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
>>> forest.tree_paper_range
[(0, 60), (1, 2), (4, 10), (13, 60), (16, 22), (29, 30)]
>>> e3_at_2 = [n for n in range(forest.n_nodes)
...            if forest.event[n] == 2 and forest.instant[n] == 2][0]
>>> forest.paper_code[e3_at_2], PAPER.descendant_code_ranges(forest, e3_at_2)
(6, [(9, 60)])

That is the paper's ``DesCR = {[9, 10], [13, 60]}`` (section 5.1), joined across the codes
11 and 12, which no node uses.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from uncertain_cep.errors import ParamEnum
from uncertain_cep.index.forests.forest import ROOT, VIRTUAL, GroupForest

__all__ = [
    "COMPACT",
    "PAPER",
    "CodeScheme",
    "CodeSchemeName",
    "code_scheme",
    "compact_codes",
    "complete_tree_size",
    "in_ranges",
    "merge_ranges",
    "paper_codes",
]



class CodeSchemeName(ParamEnum):
    """Valid values of ``codes=``."""

    compact = "compact"
    paper = "paper"


class CodeScheme(Protocol):
    """What the index and the evaluators need from a code scheme."""

    name: str

    def code(self, forest: GroupForest, n: int) -> int: ...

    def tree_code_range(self, forest: GroupForest, t: int) -> tuple[int, int]: ...

    def descendant_code_ranges(self, forest: GroupForest, n: int,
                               until: int | None = None) -> list[tuple[int, int]]:
        """Sorted disjoint ranges holding the codes of every node an OI can reach after
        ``n``, and no other node's code. With ``until``, ranges that can only hold nodes
        at instants after ``until`` may be left out."""
        ...

    def ancestor_code_ranges(self, forest: GroupForest, n: int,
                             since: int | None = None) -> list[tuple[int, int]]:
        """Sorted disjoint ranges holding the codes of every node an OI can pass before
        ``n``, and no other node's code. With ``since``, ranges that can only hold nodes
        at instants before ``since`` may be left out (instants fall walking up, so the walk
        stops there: in a long chain of trees that is what keeps the list short)."""
        ...


def complete_tree_size(fanout: int, height: int) -> int:
    """Number of positions of a complete ``fanout``-ary tree of the given height."""
    if fanout <= 1:
        return height + 1
    return (fanout ** (height + 1) - 1) // (fanout - 1)


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort and merge overlapping or adjacent integer ranges.

    >>> merge_ranges([(5, 6), (1, 2), (3, 3), (9, 9)])
    [(1, 3), (5, 6), (9, 9)]
    """
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _coalesce(ranges: list[tuple[int, int]], used: list[int]) -> list[tuple[int, int]]:
    """Join neighbouring ranges when no real node's code lies between them: the paper's
    codes leave most positions of the padded f-trees unused, so a chain of per-level
    ranges often covers one contiguous stretch of used codes."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if out:
            i = bisect_right(used, out[-1][1])
            if i == len(used) or used[i] >= lo:
                out[-1] = (out[-1][0], hi)
                continue
        out.append((lo, hi))
    return out


def in_ranges(code: int, ranges: list[tuple[int, int]]) -> bool:
    """Whether ``code`` lies in one of the sorted disjoint ``ranges``."""
    i = bisect_right(ranges, (code, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= code <= ranges[i][1]


# ---------------------------------------------------------------- the paper's scheme

def paper_codes(forest: GroupForest) -> tuple[list[int], list[tuple[int, int]]]:
    """Codes of every node and code range of every tree under the paper's scheme."""
    sizes = np.bincount(forest.tree, minlength=forest.n_trees)
    codes = [0] * forest.n_nodes
    ranges: list[tuple[int, int]] = [(0, 0)] * forest.n_trees
    rel = forest.rel
    # A tree's codes need the largest code of every child tree met on the way, so walk
    # with an explicit stack: (tree, next node, base, root code).
    stack = [(0, int(forest.tree_root[0]), 0, 0)]
    while stack:
        t, n, base, root_code = stack.pop()
        end = int(forest.tree_root[t]) + int(sizes[t])
        descended = False
        while n < end:
            codes[n] = base + rel[n]
            if forest.kind[n] == VIRTUAL:
                sub = int(forest.child_tree[n])
                stack.append((t, n + 1, base, root_code))  # resumed once `sub` is coded
                stack.append((sub, int(forest.tree_root[sub]), codes[n], codes[n]))
                descended = True
                break
            n += 1
        if descended:
            continue
        last = complete_tree_size(max(int(forest.tree_fanout[t]), 1),
                                  int(forest.tree_height[t])) - 1
        virtuals = forest.tree_virtuals[t]
        if virtuals and rel[virtuals[-1]] == last:
            top = ranges[int(forest.child_tree[virtuals[-1]])][1]
        else:
            top = _base_at(forest, t, last, codes, ranges, root_code) + last
        ranges[t] = (root_code, top)
        if stack:
            # Resume the parent tree: its base jumps to this tree's largest code.
            pt, pn, _, proot = stack.pop()
            stack.append((pt, pn, top, proot))
    return codes, ranges


def _base_at(forest: GroupForest, t: int, r: int, codes: Sequence[int],
             ranges: Sequence[tuple[int, int]], root_code: int) -> int:
    """Base value at relative position ``r`` of tree ``t``: the largest code inside the
    last virtual node before ``r`` in breadth-first order, else the root's code."""
    virtuals = forest.tree_virtuals[t]
    i = bisect_left(forest.virtual_rels[t], r) - 1
    if i < 0:
        return root_code
    return ranges[int(forest.child_tree[virtuals[i]])][1]


class _PaperScheme:
    name = "paper"

    def code(self, forest: GroupForest, n: int) -> int:
        return forest.paper_code[n]

    def tree_code_range(self, forest: GroupForest, t: int) -> tuple[int, int]:
        return forest.tree_paper_range[t]

    def _code_at(self, forest: GroupForest, t: int, r: int) -> int:
        root_code = forest.tree_paper_range[t][0]
        return _base_at(forest, t, r, forest.paper_code, forest.tree_paper_range, root_code) + r

    def _virtual_at(self, forest: GroupForest, t: int, r: int) -> int:
        virtuals = forest.tree_virtuals[t]
        rels = forest.virtual_rels[t]
        i = bisect_left(rels, r)
        return virtuals[i] if i < len(virtuals) and rels[i] == r else -1

    def descendant_code_ranges(self, forest: GroupForest, n: int,
                               until: int | None = None) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        x = n
        # Every level down an OI path places at least one more event, one instant later
        # at least: nodes k levels below lie at instant(n) + k or later.
        start = int(forest.instant[n]) if forest.instant[n] >= 0 else None
        while True:
            t = int(forest.tree[x])
            f = max(int(forest.tree_fanout[t]), 1)
            v, d, h = forest.rel[x], int(forest.depth[x]), int(forest.tree_height[t])
            levels = h - d
            if until is not None and start is not None:
                levels = min(levels, max(0, until - start))
            for k in range(1, levels + 1):
                if f == 1:
                    lo = hi = v + k
                else:
                    fk = f ** k
                    lo = fk * v + (fk - 1) // (f - 1)
                    hi = lo + fk - 1
                top_v = self._virtual_at(forest, t, hi)
                top = (forest.tree_paper_range[int(forest.child_tree[top_v])][1] if top_v >= 0
                       else self._code_at(forest, t, hi))
                out.append((self._code_at(forest, t, lo), top))
            if forest.tree_virtual[t] < 0:
                return _coalesce(merge_ranges(out), forest.sorted_paper_codes)
            x = int(forest.tree_virtual[t])

    def ancestor_code_ranges(self, forest: GroupForest, n: int,
                             since: int | None = None) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        x = n
        while True:
            t = int(forest.tree[x])
            f = max(int(forest.tree_fanout[t]), 1)
            r = forest.rel[x]
            a = x
            while r > 0:
                r = (r - 1) // f
                a = int(forest.parent[a])
                if since is not None and _all_before(forest, a, since):
                    return merge_ranges(out)
                c = self._code_at(forest, t, r)
                v = self._virtual_at(forest, t, r)
                # Every node of an ancestor's child tree lies on some OI through n.
                out.append((c, forest.tree_paper_range[int(forest.child_tree[v])][1]
                            if v >= 0 else c))
            if forest.tree_virtual[t] < 0:
                return merge_ranges(out)
            x = int(forest.tree_virtual[t])


# ---------------------------------------------------------------- the compact scheme

def compact_codes(forest: GroupForest) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pre-order codes, subtree ends and tree ranges under the compact scheme."""
    n_nodes = forest.n_nodes
    code = np.zeros(n_nodes, dtype=np.int64)
    end = np.zeros(n_nodes, dtype=np.int64)
    tree_range = np.zeros((forest.n_trees, 2), dtype=np.int64)
    counter = 0
    stack: list[tuple[bool, int]] = [(False, int(forest.tree_root[0]))]
    while stack:
        leaving, n = stack.pop()
        if leaving:
            end[n] = counter - 1
            if forest.kind[n] == ROOT:
                tree_range[int(forest.tree[n])] = (code[n], counter - 1)
            continue
        code[n] = counter
        stack.append((True, n))
        stack.extend((False, int(c)) for c in reversed(forest.children(n)))
        if forest.kind[n] == VIRTUAL:
            # The child tree's root takes this same code, so do not advance the counter.
            stack.append((False, int(forest.tree_root[int(forest.child_tree[n])])))
        else:
            counter += 1
    return code, end, tree_range


class _CompactScheme:
    name = "compact"

    def code(self, forest: GroupForest, n: int) -> int:
        return int(forest.compact_code[n])

    def tree_code_range(self, forest: GroupForest, t: int) -> tuple[int, int]:
        lo, hi = forest.tree_compact_range[t]
        return int(lo), int(hi)

    def descendant_code_ranges(self, forest: GroupForest, n: int,
                               until: int | None = None) -> list[tuple[int, int]]:
        out = [(int(forest.compact_code[n]) + 1, int(forest.compact_end[n]))]
        t = int(forest.tree[n])
        while forest.tree_virtual[t] >= 0:
            v = int(forest.tree_virtual[t])
            out.append((int(forest.tree_compact_range[t][1]) + 1, int(forest.compact_end[v])))
            t = int(forest.tree[v])
        return merge_ranges(out)

    def ancestor_code_ranges(self, forest: GroupForest, n: int,
                             since: int | None = None) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        x = n
        while True:
            a = int(forest.parent[x])
            while a >= 0:
                if since is not None and _all_before(forest, a, since):
                    return merge_ranges(out)
                c = int(forest.compact_code[a])
                if forest.kind[a] == VIRTUAL:
                    out.append((c, int(forest.tree_compact_range[int(forest.child_tree[a])][1])))
                else:
                    out.append((c, c))
                a = int(forest.parent[a])
            t = int(forest.tree[x])
            if forest.tree_virtual[t] < 0:
                return merge_ranges(out)
            x = int(forest.tree_virtual[t])


def _all_before(forest: GroupForest, a: int, since: int) -> bool:
    """Whether ancestor ``a`` and everything an OI passes before it lie before ``since``:
    a real node before it, or a virtual node whose whole child tree is."""
    if forest.kind[a] == VIRTUAL:
        return bool(forest.tree_hi[int(forest.child_tree[a])] < since)
    return bool(forest.kind[a] != ROOT and forest.instant[a] < since)


PAPER: CodeScheme = _PaperScheme()
COMPACT: CodeScheme = _CompactScheme()


def code_scheme(name: str) -> CodeScheme:
    """The scheme called ``name`` (``"compact"`` or ``"paper"``)."""
    return {"compact": COMPACT, "paper": PAPER}[CodeSchemeName.get_value(name)]
