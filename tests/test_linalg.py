"""Dense linear algebra helpers (sim.linalg) against numpy's SVD and pseudo-inverse."""
import numpy as np
import pytest
import scipy.linalg
from numpy.testing import assert_allclose

from sim.linalg import (COLD_SHIFT, CONDITION_TOL, _extreme, _rows, condition_number, condition_state,
                        partitioned_null_space, singular_values)


def _partition(rng, m, n_d, n_i):
    """A (m, n_d + n_i) with the dependent columns scattered among the independent ones."""
    A = rng.normal(size=(m, n_d + n_i))
    perm = rng.permutation(n_d + n_i)
    return A, np.sort(perm[:n_d]), np.sort(perm[n_d:])


@pytest.mark.parametrize("m, n_d, n_i", [(6, 6, 5), (4, 7, 3), (0, 3, 2), (5, 5, 0)])
def test_partitioned_null_space(m, n_d, n_i):
    A, dep, ind = _partition(np.random.default_rng(m + n_d), m, n_d, n_i)
    B = partitioned_null_space(A, dep, ind, 1e-6)
    assert B.shape == (n_d + n_i, n_d + n_i - m)
    assert np.abs(A @ B).max(initial=0.0) < 1e-12
    assert_allclose(B[ind, :n_i], np.eye(n_i), atol=0, err_msg="independent coordinates: identity block")
    assert_allclose(B[ind, n_i:], 0.0, atol=0)
    assert np.linalg.matrix_rank(B) == B.shape[1]


def test_partitioned_null_space_refuses_dependent_rows():
    rng = np.random.default_rng(3)
    A, dep, ind = _partition(rng, 4, 5, 3)
    A[3] = A[0] + 2 * A[1]                      # a redundant row
    assert partitioned_null_space(A, dep, ind, 1e-6) is None
    A, dep, ind = _partition(rng, 4, 5, 3)
    A[3, dep] = A[0, dep] + 1e-9 * rng.normal(size=dep.size)   # nearly dependent on the dependent block
    assert partitioned_null_space(A, dep, ind, 1e-6) is None
    A, dep, ind = _partition(rng, 6, 5, 3)        # more rows than dependent coordinates
    assert partitioned_null_space(A, dep, ind, 1e-6) is None


@pytest.mark.parametrize("m, rank", [(9, 6), (6, 6), (9, 4)])
def test_rigid_motion_solve_is_the_minimum_norm_least_squares(m, rank):
    """The rigid motion's solve (sim.solvers.motion._prepare, _solve): least squares at full
    column rank (tall: by the normal equations; square: by LU), minimum norm below it."""
    from sim.solvers.motion import _prepare, _solve

    rng = np.random.default_rng(m + rank)
    A = rng.normal(size=(m, rank)) @ rng.normal(size=(rank, 6)) if rank < 6 else rng.normal(size=(m, 6))
    b = rng.normal(size=m)
    F, ok, V, lam = _prepare(A, rank)
    assert ok and lam.size == (0 if rank == 6 else rank)
    assert_allclose(_solve(F, V, lam, A, b), np.linalg.pinv(A, rcond=1e-10) @ b, rtol=1e-10, atol=1e-12)
    if rank < 6:
        s = np.linalg.svd(A, compute_uv=False)
        assert_allclose(np.sqrt(lam[0] / lam[-1]), s[0] / s[rank - 1], rtol=1e-10)


def test_singular_values_match_the_svd():
    rng = np.random.default_rng(5)
    U, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    V, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    s = np.logspace(0, -6, 8)
    A = U[:, :8] @ np.diag(s) @ V.T
    for M in (A, A.T):
        # Through the Gram matrix the error on sigma_k is about eps sigma_1^2 / sigma_k.
        error = np.abs(singular_values(M) - s)
        assert np.all(error < 1e-14 * s[0] ** 2 / s + 1e-13 * s), error / s


def _sparse(rng, n, density):
    """Square matrix with ~density of its entries nonzero, a diagonal that forces pivoting."""
    A = rng.normal(size=(n, n)) * (rng.random((n, n)) < density)
    return A + np.diag(1e-3 * rng.normal(size=n))


@pytest.mark.parametrize("n, density", [(1, 1.0), (7, 0.4), (60, 0.08), (60, 1.0)])
def test_sparse_lu_solves_against_lapack(n, density):
    """sim.linalg.sparse_lu: A[perm] = L U, and A^-1 B, A^-T B to round-off of LAPACK's solve
    (several right-hand sides, and one by lu_solve_vector)."""
    from sim.linalg import lu_solve, lu_solve_vector, sparse_lu, sparse_solve
    rng = np.random.default_rng(n + int(100 * density))
    A, B = _sparse(rng, n, density), rng.normal(size=(n, 3))
    (LU, perm, *_), ok = sparse_lu(A)
    assert ok and sorted(perm) == list(range(n))
    L, U = np.tril(LU, -1) + np.eye(n), np.triu(LU)
    assert_allclose(L @ U, A[perm], rtol=0, atol=1e-13 * np.abs(A).max())
    assert np.abs(L).max() <= 1.0 + 1e-15, "partial pivoting: multipliers at most 1"
    F, _ = sparse_lu(A)
    scale = np.linalg.cond(A) * 1e-15
    ref = np.linalg.solve(A, B)
    assert np.abs(lu_solve(F, B, False) - ref).max() <= scale * np.abs(ref).max()
    ref_t = np.linalg.solve(A.T, B)
    assert np.abs(lu_solve(F, B, True) - ref_t).max() <= scale * np.abs(ref_t).max()
    assert np.abs(sparse_solve(A, B) - ref).max() <= scale * np.abs(ref).max()
    for trans, r in ((False, ref), (True, ref_t)):
        x = lu_solve_vector(F, np.ascontiguousarray(B[:, 1:2]), trans)
        assert x.shape == (n, 1) and np.abs(x - r[:, 1:2]).max() <= scale * np.abs(r).max()


def test_sparse_lu_reports_a_singular_matrix():
    from sim.linalg import sparse_lu, sparse_solve
    A = _sparse(np.random.default_rng(1), 8, 0.5)
    A[:, 3] = 0.0
    assert not sparse_lu(A)[1]
    assert np.isnan(sparse_solve(A, np.ones((8, 2)))).all()


def _crossing(n=10, samples=61):
    """Matrices ``U(t) diag(s(t)) V(t)^T`` along ``t`` in [0, 3] whose two largest singular
    values nearly coincide (3 and 2.999) and whose three smallest cross: 0.02 + 0.01 t, 0.025
    and 0.08 - 0.025 t, which falls through the other two (a block of two warm vectors
    follows the wrong pair for a while).  Returns the matrices and their singular values."""
    rng = np.random.default_rng(7)
    K, L = (0.2 * (X - X.T) for X in rng.normal(size=(2, n, n)))
    mats, sigma = [], []
    for t in np.linspace(0.0, 3.0, samples):
        s = np.array([3.0, 2.999, 2.0, 1.5, 1.2, 1.0, 0.5] + [0.02 + 0.01 * t, 0.025, 0.08 - 0.025 * t])
        mats.append(scipy.linalg.expm(t * K) @ np.diag(s) @ scipy.linalg.expm(t * L).T)
        sigma.append(np.sort(s)[::-1])
    return mats, np.array(sigma)


def test_condition_number_along_a_sequence_is_the_svds():
    """Warm-started along a sequence with clustered and crossing singular values, the
    condition number is that of the SVD to round-off at every matrix (the first by the dense
    eigensolve, which sets the state)."""
    mats, sigma = _crossing()
    basis, shift = condition_state(10)
    cond = [condition_number(A, basis, shift) for A in mats]
    assert_allclose(cond, sigma[:, 0] / sigma[:, -1], rtol=1e-12, atol=0)
    assert_allclose([min(cond), max(cond)], [120.0, 600.0], rtol=1e-12)


def test_extreme_eigenvalues_are_bracketed():
    """Each end of the spectrum of ``A^T A``: the Ritz value is below the largest eigenvalue
    of ``s A^T A`` and within the tolerance of it, also where the smallest singular values
    cross (the block's vectors then belong to the wrong ones until the shifted factor fails
    and the shift widens)."""
    mats, sigma = _crossing()
    basis, shift = condition_state(10)
    condition_number(mats[0], basis, shift)        # the dense start
    for A, s in zip(mats[1:], sigma[1:]):
        G = np.tril(A.T @ A)
        ptr, col = _rows(A)
        L, lptr, lrow = np.empty((10, 10)), np.zeros(11, dtype=np.int64), np.empty(100, dtype=np.int64)
        top, ok, _ = _extreme((A, ptr, col), G, 1.0, basis[0], shift[0], 0.0, (L, lptr, lrow))
        assert ok and -1e-14 <= (s[0] ** 2 - top) / s[0] ** 2 <= CONDITION_TOL      # -: A to round-off
        bottom, ok, _ = _extreme((A, ptr, col), G, -1.0, basis[1], shift[1], top, (L, lptr, lrow))
        assert ok and -1e-13 <= (-bottom - s[-1] ** 2) / s[-1] ** 2 <= 1e-10   # 512 eps cond^2 < 5e-8
        assert_allclose(-bottom, s[-1] ** 2, rtol=1e-12)                # eps cond, not eps cond^2


def test_condition_number_near_a_singularity_is_the_dense_eigensolves():
    """Above a condition number of ~3e4 no bracket is narrower than the round-off of ``A^T A``:
    the dense eigensolve (which resets the state), as for a singular matrix (inf)."""
    mats, _ = _crossing(samples=3)
    basis, shift = condition_state(10)
    condition_number(mats[0], basis, shift)
    U, _, Vt = np.linalg.svd(mats[1])
    s = np.array([3.0, 2.0, 1.5, 1.2, 1.0, 0.5, 0.3, 0.2, 0.1, 3e-5])
    A = U @ np.diag(s) @ Vt
    assert_allclose(condition_number(A, basis, shift), 1e5, rtol=1e-5)   # eps cond^2 through A^T A
    assert_allclose(shift, COLD_SHIFT, rtol=0)
    A[:, 3] = 0.0
    assert condition_number(A, basis, shift) == np.inf


@pytest.mark.parametrize("small", [True, False])
def test_svd_null_space_and_lstsq_by_numpy_and_by_scipy(monkeypatch, small):
    """Both drivers of sim.linalg (numpy's on small matrices, scipy's QR-based ones on larger)
    give the same singular values, the same null space (the span, whatever the basis) and the
    same minimum-norm least-squares solution, on a rank-deficient (12, 20) matrix of rank 8."""
    import sim.linalg as L
    monkeypatch.setattr(L, "NUMPY_MAX", 64 if small else 0)
    rng = np.random.default_rng(11)
    A = rng.standard_normal((12, 8)) @ rng.standard_normal((8, 20))
    b = rng.standard_normal(12)
    s_ref = np.linalg.svd(A, compute_uv=False)
    assert_allclose(L.svd(A, compute_uv=False), s_ref, rtol=1e-12, atol=1e-12 * s_ref[0])
    N = L.null_space(A, 1e-10)
    assert N.shape == (20, 12)
    assert L.rank(A, 1e-10) == 8 and L.rank(A[:, :5], 1e-10) == 5 and L.rank(A[:0], 1e-10) == 0
    assert L.rank(np.zeros((3, 20)), 1e-10) == 0
    assert_allclose(N.T @ N, np.eye(12), atol=1e-12)
    assert np.abs(A @ N).max() < 1e-12 * s_ref[0]
    x = L.lstsq(A, b, cond=1e-10)
    x_ref = np.linalg.pinv(A, rcond=1e-10) @ b
    assert_allclose(x, x_ref, rtol=1e-10, atol=1e-12)
