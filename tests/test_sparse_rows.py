"""Matrices by their rows' nonzeros (sim.model.sparse_rows) against the dense matrices they
stand for, and a body's M_ff, K_ff and basis held that way against the dense products of its
nodal matrices."""
import numpy as np
import pytest

from sim.model.loader import load_model
from sim.model.sparse_rows import SparseRows, union


def _random(rng, n, m, fill=0.3):
    return rng.normal(size=(n, m)) * (rng.random((n, m)) < fill)


def test_products_are_the_dense_ones():
    """``A X`` (vectors, matrices, stacks), ``x A^T``, ``A^T``, ``diag(X^T A X)``, a block, the
    symmetric part and a sum: the dense expressions to round-off (1e-15 of their scale)."""
    rng = np.random.default_rng(0)
    A = _random(rng, 9, 7)
    S = SparseRows.of_dense(A)
    assert S.shape == (9, 7) and S.nnz == np.count_nonzero(A) and np.array_equal(np.asarray(S), A)
    x, X, Xs = rng.normal(size=7), rng.normal(size=(7, 3)), rng.normal(size=(4, 7, 3))
    for got, ref in ((S @ x, A @ x), (S @ X, A @ X), (S @ Xs, A @ Xs), (S.apply(Xs.swapaxes(1, 2)), Xs.swapaxes(1, 2) @ A.T),
                     (S.T.toarray(), A.T)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-15 * np.abs(ref).max())
    C = _random(rng, 8, 8, 0.5)
    Cs = SparseRows.of_dense(C)
    np.testing.assert_allclose(Cs.quadratic(X[:, :2].repeat(2, axis=0)[:8]),
                               np.einsum("ik,ij,jk->k", X[:, :2].repeat(2, axis=0)[:8], C, X[:, :2].repeat(2, axis=0)[:8]),
                               rtol=1e-14)
    keep = np.array([1, 4, 5, 7])
    assert np.array_equal(Cs.take(keep).toarray(), C[np.ix_(keep, keep)])
    assert np.array_equal(Cs.symmetric().toarray(), 0.5 * (C + C.T))        # the same sums, bitwise
    assert np.array_equal(Cs.plus(Cs.T).toarray(), C + C.T)
    assert Cs.half_band() == max(abs(i - j) for i, j in zip(*np.nonzero(C)))
    with pytest.raises(TypeError):      # no dense matrix made behind the caller's back
        X.T @ S


def test_entries_repeated_are_summed_in_order_and_zeros_dropped():
    """Entries at one place add up in the order given (``np.add.at`` into a dense array); exact
    zeros, given or summed, leave no entry; a selection is recognised, a scaled one is not."""
    i, j = np.array([2, 0, 2, 1, 2]), np.array([1, 0, 1, 1, 1])
    v = np.array([1e16, 3.0, 1.0, 0.0, -1e16])
    S = SparseRows.of_entries(i, j, v, (3, 2))
    dense = np.zeros((3, 2))
    np.add.at(dense, (i, j), v)
    assert np.array_equal(S.toarray(), dense) and S.nnz == 1          # (2, 1) sums to 0.0 in this order
    B = SparseRows.selection([3, 0, 4], 6)
    assert np.array_equal(B.selected(), [3, 0, 4]) and np.array_equal(B.toarray(), np.eye(6)[:, [3, 0, 4]])
    assert SparseRows.of_dense(2.0 * np.eye(3)).selected() is None
    assert SparseRows.zeros(0).shape == (0, 0) and SparseRows.zeros(3, 2).toarray().shape == (3, 2)


def test_union_holds_every_matrix_on_one_pattern():
    """Several matrices on the union of their patterns: each one's entries there, zeros at the
    others' places, every row's columns ascending."""
    rng = np.random.default_rng(1)
    mats = [_random(rng, 6, 6, 0.3) for _ in range(3)]
    cols, values = union([SparseRows.of_dense(A) for A in mats])
    for row in cols:
        assert np.all(np.diff(row[row >= 0]) > 0) and np.all(row[np.argmax(row < 0):] < 0 if (row < 0).any() else True)
    for A, val in zip(mats, values):
        assert np.array_equal(SparseRows(cols, val, 6).toarray(), A)
    assert np.array_equal(np.any(np.stack(mats) != 0, axis=0), SparseRows(cols, np.ones(cols.shape) * (cols >= 0), 6).toarray() != 0)


@pytest.mark.parametrize("path, params", [("models/rrru3.py", {"elements_per_link": 24}),
                                          ("models/slider_crank.py", {"elements": 8, "modes": 4})])
def test_body_matrices_are_the_projected_nodal_ones(path, params):
    """A clamped beam (a selection basis, 24 elements: nodal matrices above DENSE_NODAL held by
    their nonzeros) and a pinned beam with four modes (a dense basis): ``M_ff``, ``K_ff`` are
    ``B^T M B`` and ``B^T K B`` of the dense nodal matrices (the same sums: bitwise for the
    selection, 1e-12 for the modal basis), symmetric to round-off; the basis is a selection of the nodal
    coordinates, or the modes' dense columns."""
    from sim.model.builder import beam_structure_matrices

    model = load_model(path, params)
    body = next(b for b in model.bodies if b.n_f)
    assert isinstance(body.mass_ff, SparseRows) and isinstance(body.basis, SparseRows)
    B = body.basis.toarray()
    nodal = beam_structure_matrices(body.nodes_B, body.elements, body.sections, _z_refs(body))
    K = nodal["K"].toarray()
    M_nodal = nodal["Mrot"].toarray()
    I = nodal["I"]
    if isinstance(I, np.ndarray):
        M_nodal += np.einsum("kkij->ij", I)
    else:
        (k, l, i, j), value = I[0].T, I[1]
        np.add.at(M_nodal, (i[k == l], j[k == l]), value[k == l])
    K_ff, M_ff = body.stiffness_ff.toarray(), body.mass_ff.toarray()
    tol = 0.0 if body.basis.selected() is not None else 1e-12
    np.testing.assert_allclose(K_ff, B.T @ K @ B, rtol=0, atol=tol * np.abs(K_ff).max())
    np.testing.assert_allclose(M_ff, B.T @ M_nodal @ B, rtol=0, atol=max(tol, 1e-15) * np.abs(M_ff).max())
    np.testing.assert_allclose(K_ff, K_ff.T, rtol=0, atol=1e-14 * np.abs(K_ff).max())   # (T K T^T's round-off)
    if body.basis.selected() is not None:
        assert body.mass_ff.cols.shape[1] <= 18 and body.stiffness_ff.cols.shape[1] <= 18


def _z_refs(body):
    """The elements' z axes (body frame) the builder used: the third column of their frames."""
    return body.element_frames[:, :, 2]
