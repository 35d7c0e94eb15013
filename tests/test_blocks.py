"""The block factorisation of the transient's iteration matrix (sim.solvers.blocks, issue 41):
the same solutions as the dense LU, to round-off for one solve and to the Newton tolerance
over a run, on several models, with and without the low-rank modal damping; the choice of the
path by size."""
import numpy as np
import pytest

from sim.model.evaluator import Evaluator
from sim.model.loader import load_model
from sim.solvers import blocks, integrators
from sim.solvers.integrators import Newmark, Options
from sim.solvers.simulate import Drive

MODELS = {
    # name: model file, parameters, step [s] (the slider-crank's 3D rod: its scenario's step)
    "rrru3": ("models/rrru3.py", {"elements_per_link": 4}, 2e-4),
    "slider_crank": ("models/slider_crank.py", {"elements": 16, "planar": False}, 5e-5),
    "spinup": ("models/spinup_beam.py", {"elements": 10}, 2e-4),
}


def _model(name):
    path, params, _ = MODELS[name]
    return load_model(path, params)


def _schedule(model):
    """Modal damping (2 % on the six lowest modes) frozen at the home pose: a low-rank term."""
    from sim.solvers.damping import Damping, schedule
    return schedule(model, Damping(zeta=0.02, modes=6), np.array([0.0]), model.q_home[None])


def _start(model, ev):
    """A velocity that meets the joints at the home pose: the robot moves (gravity or not)."""
    from sim.linalg import null_space
    E = ev.evaluate(model.q_home, np.zeros(model.n_v))
    N = null_space(E.J, 1e-10)
    return N @ np.random.default_rng(0).normal(size=N.shape[1]) * 0.05


# Newton to well below the compared differences, but above the slider-crank's round-off floor:
# at 1e-13 m its iterates stall there and the two paths' round-off changes the counts by 5 %
# (numpy 2.4's BLAS); at 1e-12 m the counts are equal and the states agree to 1e-13 m.
NEWTON_TOL = 1e-12


def _run(model, solver, steps, damping=None, h=None):
    ev = Evaluator(model)
    h = h or next(step for path, _, step in MODELS.values() if model.name in path)
    g = Newmark(ev, Drive("free"), 0.0, model.q_home, _start(model, ev), h,
                Options(solver=solver, newton_tol=NEWTON_TOL), damping=damping)
    g.advance(steps)
    assert g.status == "running", g.message
    return g


def _assembled(pat):
    """The iteration matrix held on the structure ``pat`` (known part plus correction), dense."""
    m = pat.ptr.size - 1
    A = np.zeros((m, m))
    A[pat.rows, np.repeat(np.arange(m), np.diff(pat.ptr))] = pat.known + pat.values
    return A


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("damped", [False, True])
def test_block_solve_is_the_dense_solve_to_round_off(name, damped):
    """One solve with the blocks (and Woodbury's low-rank term) against numpy's dense solve of
    the same assembled matrix: within 1e-12 relative, and the bodies' interiors are eliminated."""
    model = _model(name)
    g = _run(model, "block", 3, _schedule(model) if damped else None)
    st, w = g.state, g.work
    blk = st.blocks
    assert g.n_blocked >= 1 and blk.info[blocks.ACTIVE] == 1
    m = w.r.size
    # Every flexible body eliminated: all but its marker nodes' coordinates (at most 2 x 6).
    nf = blk.ranges[:, 2] - blk.ranges[:, 1]
    assert len(nf) and (blk.ptr[:, 0] >= nf - 12).all(), (blk.ptr[:, 0], nf)
    assert blk.info[blocks.N_BORDER] == m - blk.ptr[:, 0].sum()
    assert (w.low.shape[1] > 0) == damped
    # The matrix it factorised: known + delta on the structure, zero off it; the low-rank
    # damping is added as the dense path adds it.
    A = _assembled(st.pattern)
    sch = g.scheme
    blocks.add_low_rank(A, w.low, w.low_rate, sch.h * sch.gamma * sch.c)
    rng = np.random.default_rng(1)
    for _ in range(3):
        z = rng.normal(size=m)
        x = z.copy()
        blocks.solve(st.lu, st.piv, blk, x)
        ref = np.linalg.solve(A, z)
        assert np.abs(x - ref).max() <= 1e-12 * np.abs(ref).max() * max(1.0, np.linalg.cond(A) * 1e-6)
        assert np.abs(A @ x - z).max() <= 1e-12 * np.abs(A).max() * np.abs(x).max()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_block_and_dense_runs_agree(name):
    """200 steps of the free robot from a velocity that meets its joints, with each path: the
    same Newton iteration counts, configurations within 1e-11 m and velocities within 1e-8 of
    their largest (Newton's tolerance is 1e-12 m here: the two paths' round-off moves the last
    iterate by far less)."""
    model = _model(name)
    damping = _schedule(model) if name == "rrru3" else None
    dense, block = (_run(model, s, 200, damping) for s in ("dense", "block"))
    assert dense.n_blocked == 0 and block.n_blocked >= 1
    # The round-off of the two paths can move a convergence test by one iteration: the
    # slider-crank converges linearly (~10 iterations a step) and a change of 1e-17 in the
    # first step's state moves 1.5 % of its 2000 counts by one
    assert abs(dense.n_iterations - block.n_iterations) <= 0.03 * dense.n_iterations
    dq, dv = np.abs(dense.q - block.q).max(), np.abs(dense.v - block.v).max() / np.abs(dense.v).max()
    assert dq <= 1e-11 and dv <= 1e-8


def test_choice_by_size():
    """`auto` keeps the dense LU below blocks.BLOCK_MIN unknowns and takes the blocks from there;
    `dense` never blocks."""
    small = _model("spinup")
    big = load_model("models/rrru3.py", {"elements_per_link": 8})
    g = _run(small, "auto", 2)
    assert g.work.r.size < blocks.BLOCK_MIN and g.n_blocked == 0
    g = _run(big, "auto", 2)
    assert g.work.r.size >= blocks.BLOCK_MIN and g.n_blocked == g.n_factorizations >= 1
    g = _run(big, "dense", 2)
    assert g.n_blocked == 0
    # Forced, on bodies too short to keep an interior (2 elements: 6 coordinates besides the
    # marker node's): the dense LU, the run as in dense mode.
    few = load_model("models/rrru3.py", {"elements_per_link": 2})
    g, ref = _run(few, "block", 5), _run(few, "dense", 5)
    assert g.n_blocked == 0 and g.n_factorizations >= 1 and np.array_equal(g.q, ref.q)


def test_solve_on_the_factors_nonzeros_is_the_column_solve():
    """The dense path's LU factors solved with on their nonzeros (``pattern_solve``, from
    ``lu_pattern`` after each factorisation) give the column sweeps' solution bitwise: on the
    slider-crank's iteration matrix after a run (two thirds of its factors zero, where
    the pattern pays) and on a random sparse matrix with pivoting; a run's factors carry the
    pattern, a model above PATTERN_SOLVE_MAX unknowns or on the block path has no room for it."""
    import scipy.linalg
    from sim.kernels.lapack import getrf

    g = _run(load_model("models/slider_crank.py", {"elements": 8, "planar": True}), "auto", 20)
    st = g.state
    lu, piv, blk = integrators._factors(st), st.piv, st.blocks
    m = lu.shape[0]
    assert blk.lu_rows.size == m * (m - 1) and blk.lu_ptr[1, m] < 0.4 * m * m      # most factors zero
    rng = np.random.default_rng(3)
    for b in rng.normal(size=(5, m)):
        x, y = b.copy(), b.copy()
        blocks.lu_solve(lu, piv, x)
        blocks.solve(lu, piv, blk, y)
        assert np.array_equal(x, y)
    A = np.asfortranarray(rng.normal(size=(40, 40)) * (rng.random((40, 40)) < 0.15) + np.diag(rng.random(40)))
    own = blocks.blocks(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 40)
    piv = np.zeros(40, dtype=np.int32)
    assert getrf(A, piv) == 0 and (piv != np.arange(40)).any()
    blocks.lu_pattern(A, own)
    b = rng.normal(size=40)
    x, y = b.copy(), b.copy()
    blocks.lu_solve(A, piv, x)
    blocks.pattern_solve(A, piv, own, y)
    assert np.array_equal(x, y)
    np.testing.assert_allclose(scipy.linalg.lu_solve((A, piv), b), x, rtol=1e-12)
    big = blocks.blocks(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), blocks.PATTERN_SOLVE_MAX + 1,
                        mode="dense")
    shared = blocks.blocks(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 200)
    assert big.lu_rows.size == 0 and shared.lu_rows.size == 0


def test_dense_fallback_on_the_structure():
    """Where the blocks do not serve (forced here from the first factorisation), the loop
    allocates the dense factors once and factorises the matrix its structure holds: the run is
    the dense path's to round-off (as test_block_and_dense_runs_agree), the factors (m, m)."""
    model = _model("rrru3")
    ev = Evaluator(model)
    g = Newmark(ev, Drive("free"), 0.0, model.q_home, _start(model, ev), MODELS["rrru3"][2],
                Options(solver="block", newton_tol=NEWTON_TOL))
    m = g.work.r.size
    assert g.state.pattern.ptr.size and g.state.lu.shape == (2, 2)
    g.state.blocks.info[blocks.MODE] = blocks.MODES_DENSE
    g.advance(100)
    assert g.status == "running", g.message
    assert g.n_blocked == 0 and g.n_factorizations >= 1 and g.state.lu.shape == (m, m)
    ref = _run(model, "dense", 100)
    assert abs(ref.n_iterations - g.n_iterations) <= 0.01 * ref.n_iterations
    assert np.abs(ref.q - g.q).max() <= 1e-11
    assert np.abs(ref.v - g.v).max() <= 1e-8 * np.abs(ref.v).max()


def _arrays(x):
    """The numpy arrays in the tuples ``x`` (nested), each memory once (a view of another's
    memory, e.g. a transposed one, counts as that one)."""
    out = {}
    for item in x:
        if isinstance(item, np.ndarray):
            out[(item.__array_interface__["data"][0], item.nbytes)] = item
        elif isinstance(item, tuple):
            out.update({(a.__array_interface__["data"][0], a.nbytes): a for a in _arrays(item)})
    return list(out.values())


def test_integrator_memory_on_the_block_path(monkeypatch):
    """The integrator's arrays on the block path (3-RRRU, 8 elements per link, modal damping as
    a low-rank term): no square array of the unknowns (the iteration matrix and its correction
    on their structure, the factors by blocks) nor of the velocity coordinates (M and dQ/dv on
    that structure too; no tangent stiffness in this model), the rest linear in the coordinates
    (at most 200 x (n_v + n_c) entries each: rows, low-rank factors, band and coupling blocks,
    the structure, the positions the evaluation writes M and dQ/dv at),
    and the Schur complement's room on the border, which does not grow with them; the damping
    schedule forms no dense D."""
    model = load_model("models/rrru3.py", {"elements_per_link": 8})
    damping = _schedule(model)
    monkeypatch.setattr(integrators, "STORE_MIN", 0)     # the stores from the model's size up
    g = _run(model, "auto", 3, damping)
    st, w = g.state, g.work
    m, n_v = w.r.size, model.n_v
    assert m >= blocks.BLOCK_MIN and g.n_blocked == g.n_factorizations >= 1 and w.Ks.values.size == 0
    arrays = [a for a in _arrays(st + w) if a is not st.blocks.schur]
    square = sorted((a.shape for a in arrays if a.ndim == 2 and min(a.shape) >= n_v), reverse=True)
    assert square == [], square
    assert w.M.size == w.G.size == w.Kt.size == 0
    assert w.Ms.values.size == w.Gs.values.size == st.pattern.rows.size
    assert st.delta.size == 0 and w.known.size == 0 and st.lu.size == 4 and st.pattern.values.size
    rest = [a for a in arrays if not (a.ndim == 2 and min(a.shape) >= n_v)]
    assert max(a.size for a in rest) <= 200 * m, max((a.size, a.shape) for a in rest)
    assert damping._matrix is None
    # The Schur complement's room: the border the structure leaves, the same with twice the
    # elements (joint rows, reference coordinates, marker nodes).
    n_S = st.blocks.schur.shape[0]
    assert st.blocks.info[blocks.N_BORDER] <= n_S
    finer = Evaluator(load_model("models/rrru3.py", {"elements_per_link": 16}), load=False)
    more = blocks.blocks(finer.tables.body_v, finer.tables.body_nf, finer.n_v + (m - n_v))
    assert more.schur.shape[0] == n_S


def test_stores_from_their_size_and_the_same_run_below(monkeypatch):
    """M, dQ/dv and K_t on their stores from integrators.STORE_MIN velocity coordinates (the
    3-RRRU with 32 elements per link), dense (n_v, n_v) on the block path below it (8 elements,
    where their plain writes cost less); 40 steps of the 8-element robot, modal damping
    included, with the stores forced: the same Newton counts, configurations within 1e-12 m
    and velocities within 1e-10 of their largest (the same sums, in another order)."""
    big = Evaluator(load_model("models/rrru3.py", {"elements_per_link": 32}), load=False)
    assert big.n_v >= integrators.STORE_MIN
    model = load_model("models/rrru3.py", {"elements_per_link": 8})
    assert model.n_v < integrators.STORE_MIN
    damping = _schedule(model)
    dense = _run(model, "auto", 40, damping)
    assert dense.state.pattern.ptr.size and dense.work.M.shape == (model.n_v, model.n_v)
    assert dense.work.Ms.values.size == 0
    monkeypatch.setattr(integrators, "STORE_MIN", 0)
    held = _run(model, "auto", 40, damping)
    assert held.work.M.size == 0 and held.work.Ms.values.size
    assert (held.n_iterations, held.n_factorizations) == (dense.n_iterations, dense.n_factorizations)
    assert np.abs(held.q - dense.q).max() <= 1e-12
    assert np.abs(held.v - dense.v).max() <= 1e-10 * np.abs(dense.v).max()


def test_saddle_lstsq_is_the_dense_lstsq():
    """The consistent accelerations from the structure (M body by body, the rotors by Woodbury,
    the rows' Schur complement) against scipy's least squares on the whole saddle-point system:
    redundant rows (one repeated) and rotor inertia on the actuators: a residual as small, and
    the same accelerations and joint forces within 1e-8 of their largest entry."""
    import scipy.linalg
    model = load_model("models/rrru3.py", {"elements_per_link": 8})
    g = _run(model, "auto", 1)
    w, t = g.work, g.ev.tables
    nj = g.ev.n_joint
    J = np.vstack([w.J[:nj], w.J[:1]])          # a redundant row
    J_s = w.J[nj:]
    inertia = np.linspace(1e-3, 3e-3, J_s.shape[0])
    rng = np.random.default_rng(3)
    b = rng.normal(size=model.n_v + J.shape[0])
    b[-1] = b[model.n_v]                        # consistent with the repeated row
    M_b = g._mass_blocks()
    x = blocks.saddle_lstsq(M_b, (t.body_v, t.body_nf), J, J_s, inertia, b)
    M = scipy.linalg.block_diag(*M_b)
    A = np.block([[M + (J_s.T * inertia) @ J_s, J.T], [J, np.zeros((J.shape[0],) * 2)]])
    ref = scipy.linalg.lstsq(A, b)[0]
    n = model.n_v
    # As accurate as the dense solve (its residual), the same solution to the condition's
    # round-off (the random load excites stiff joint directions: a ~ 1e6)
    residual = lambda y: np.abs(A @ y - b).max()    # noqa: E731
    # (the structured solve's residual is 3e-13 to 1e-12 of |A| |x| as the state moves at round-off)
    assert residual(x) <= 10 * residual(ref) + 1e-11 * np.abs(A).max() * np.abs(ref).max()
    assert np.abs(x[:n] - ref[:n]).max() <= 1e-8 * np.abs(ref[:n]).max()
    # the repeated row's multiplier is split evenly (least norm) where the dense solve's rank
    # decision splits it at round-off: their joint force J^T lam is the same.  The split itself
    # is a null direction's: the model's inertia moved by 1e-16 moves it by 1e-8, so 1e-7.
    force = lambda y: J.T @ y[n:]    # noqa: E731
    assert np.abs(force(x) - force(ref)).max() <= 1e-8 * np.abs(force(ref)).max()
    assert x[n] == pytest.approx(x[-1], rel=1e-7) and x[n] + x[-1] == pytest.approx(ref[n] + ref[-1], rel=1e-8)


def _held(ev, q):
    """A drive law holding the actuators where they are at ``q``: ``reference(t) -> (s, 0, 0)``."""
    s = ev.evaluate(q, np.zeros(ev.n_v)).s.copy()
    return lambda t: (s, np.zeros_like(s), np.zeros_like(s))


PATTERN_CASES = {
    # name: model file, parameters, step [s], drive: what each exercises
    "rrru3 free, modal damping": ("models/rrru3.py", {"elements_per_link": 8}, 2e-4, "free"),
    "rrru3 servo torques": ("models/rrru3.py", {"elements_per_link": 8}, 2e-4, "torque"),
    "rrru3 free, material damping": ("models/rrru3.py", {"elements_per_link": 8}, 2e-4, "free"),
    "spin-up, stiffening": ("models/spinup_beam.py", {"elements": 12}, 2e-4, "free"),
    "slider-crank 3D, stiffening": ("models/slider_crank.py", {"elements": 16, "planar": False, "stiffening": True},
                                    5e-5, "free"),
    "pss6 compliant drives": ("models/pss6.py", {"elements_per_strut": 8}, 2e-4, "prescribed"),
}


@pytest.mark.parametrize("name", sorted(PATTERN_CASES))
def test_jacobian_pattern_holds_the_dense_correction(name):
    """The Jacobian correction on its pattern, by column groups (the block path), against the
    one taken column by column (the dense path) at the same first iterate: every entry the
    pattern leaves out is zero in the dense one (below its round-off floor), the others agree
    within 1e-10 of their row's largest entry of the iteration matrix; fewer evaluations.  The
    known part on the pattern is the dense one's, exactly."""
    from sim.solvers.simulate import Drive
    path, params, h, kind = PATTERN_CASES[name]
    model = load_model(path, params)
    ev = Evaluator(model)
    drive = (Drive("torque", reference=_held(ev, model.q_home), kp=200.0, kd=5.0, ki=1.0) if kind == "torque" else
             Drive("prescribed", reference=_held(ev, model.q_home)) if kind == "prescribed" else Drive("free"))
    # a constant damping matrix D (Q -= D v) on the bodies' blocks: dQ/dv less D on the stores
    damping = _schedule(model) if "modal" in name else \
        1e-3 * ev.evaluate(model.q_home, np.zeros(model.n_v)).M if "material" in name else None
    v0 = _start(model, ev) if kind == "free" else np.zeros(model.n_v)
    runs = {}
    for solver in ("dense", "block"):
        g = Newmark(ev, drive, 0.0, model.q_home, v0, h, Options(solver=solver, newton_tol=NEWTON_TOL),
                    damping=damping)
        g.advance(1)
        assert g.status == "running" and g.n_jacobians == 1, g.message
        runs[solver] = g
    dense, block = runs["dense"].state, runs["block"].state
    pat, m = block.pattern, runs["block"].work.r.size
    assert pat.ptr.size == m + 1 and dense.pattern.ptr.size == 0 and block.delta.size == 0
    grouped = np.zeros((m, m))
    for k in range(m):
        grouped[pat.rows[pat.ptr[k]:pat.ptr[k + 1]], k] = pat.values[pat.ptr[k]:pat.ptr[k + 1]]
    inside = grouped != 0
    inside[pat.rows, np.repeat(np.arange(m), np.diff(pat.ptr))] = True
    assert not dense.delta[~inside].any(), np.argwhere((dense.delta != 0) & ~inside)[:5]
    scale = np.abs(runs["dense"].work.known).max(axis=1, keepdims=True)
    assert np.all(np.abs(grouped - dense.delta) <= 1e-10 * scale)
    groups = pat.group_ptr.size - 1
    assert groups < m and runs["dense"].n_evaluations - runs["block"].n_evaluations == m - groups
    # The known part held on the structure (the block path factorises it there): the dense
    # path's at the same iterate, entry for entry, with nothing outside the structure.
    assert runs["dense"].n_factorizations == runs["block"].n_factorizations == 1
    known, on = runs["dense"].work.known, np.zeros((m, m), dtype=bool)
    cols = np.repeat(np.arange(m), np.diff(pat.ptr))
    on[pat.rows, cols] = True
    assert not known[~on].any(), np.argwhere((known != 0) & ~on)[:5]
    assert np.array_equal(known[pat.rows, cols], pat.known)


def _csc(A):
    """``ptr, rows`` of the nonzeros of ``A`` (m, m) by columns."""
    rows = [np.flatnonzero(A[:, k]) for k in range(A.shape[1])]
    return np.cumsum([0] + [r.size for r in rows]).astype(np.int64), np.concatenate(rows).astype(np.int64)


def test_column_groups_share_no_row():
    """The greedy colouring of blocks._groups: a tridiagonal pattern of 10 columns takes 3 groups
    (columns k, k + 3, ...), an arrow (a dense first row and column) one group per column, a
    block-diagonal arrow of three bodies of 5 (each with its own dense row) 5 groups; in each,
    no two columns of a group share a row and every column is in one group."""
    m = 10
    tri = np.eye(m) + np.eye(m, k=1) + np.eye(m, k=-1)
    arrow = np.eye(m)
    arrow[0], arrow[:, 0] = 1.0, 1.0
    bodies = np.zeros((15, 15))
    for b in range(3):
        s = slice(5 * b, 5 * b + 5)
        bodies[s, s] = np.eye(5)
        bodies[5 * b, s] = 1.0
    for A, count in ((tri, 3), (arrow, m), (bodies, 5)):
        ptr, rows = _csc(A)
        group_ptr, group_cols = blocks._groups(ptr, rows, A.shape[0])
        assert group_ptr.size - 1 == count and np.array_equal(np.sort(group_cols), np.arange(A.shape[0]))
        for g in range(count):
            cols = group_cols[group_ptr[g]:group_ptr[g + 1]]
            assert (A[:, cols] != 0).sum(axis=1).max() <= 1


def test_mass_product_by_pattern_is_the_dense_sum():
    """The step's ``M a`` by the nonzeros of the bodies' blocks (``pattern_vector``, from
    ``PATTERN_MIN`` coordinates) against the dense block product with each row summed in
    ascending column order: bitwise the same (the skipped entries are exact zeros), and
    within round-off of BLAS's product, on the 3-RRRU with 8 elements per link at a deformed,
    moving state; with a wrong band (each row's last nonzero dropped) it differs."""
    from numba import njit

    from sim.kernels.common import pattern_vector
    from sim.kernels.equations import PATTERN_MIN

    @njit
    def product(M, groups_ff, starts, x, drop):
        y = np.zeros(x.size)
        for ff, v in zip(groups_ff, starts):
            ff = ff.copy()
            if drop:
                for f in range(ff.shape[0]):
                    k = np.sum(ff[f] >= 0) - 1
                    if k > 0:
                        ff[f, k] = -1
            for v0 in v:
                pattern_vector(M, v0, ff, x, y)
        return y

    model = load_model("models/rrru3.py", {"elements_per_link": 8})
    ev = Evaluator(model)
    assert model.n_v >= PATTERN_MIN
    rng = np.random.default_rng(3)
    q = model.q_home.copy()
    q[model.q_elastic] = 1e-4 * rng.standard_normal(model.q_elastic.size)
    v = 0.1 * rng.standard_normal(model.n_v)
    M = ev.evaluate(q, v, flush=False).M
    x = rng.standard_normal(model.n_v)
    groups = [g for g in ev.tables.groups if g.q_start.size]
    ffs, starts = tuple(g.ff for g in groups), tuple(g.v_start for g in groups)
    y = product(M, ffs, starts, x, False)
    dense = np.zeros(model.n_v)
    for v0, nf in zip(ev.tables.body_v, ev.tables.body_nf):
        for i in range(v0, v0 + 6 + nf):
            acc = 0.0
            for c in range(v0, v0 + 6 + nf):
                acc += M[i, c] * x[c]
            dense[i] = acc
    np.testing.assert_array_equal(y, dense)
    np.testing.assert_allclose(y, M @ x, rtol=0, atol=1e-13 * np.abs(M @ x).max())
    assert np.abs(product(M, ffs, starts, x, True) - dense).max() > 1e-6 * np.abs(dense).max()


STORE_CASES = {
    # name: model file, parameters, targets for the compliant actuators: what each exercises
    "rrru3": ("models/rrru3.py", {"elements_per_link": 8}, False),
    "spin-up, stiffening": ("models/spinup_beam.py", {"elements": 12}, False),
    "slider-crank 3D, stiffening": ("models/slider_crank.py", {"elements": 16, "planar": False, "stiffening": True},
                                    False),
    "pss6 compliant drives": ("models/pss6.py", {"elements_per_strut": 8}, True),
}


@pytest.mark.parametrize("name", sorted(STORE_CASES))
def test_evaluation_on_stores_is_the_dense_one(name):
    """The evaluation writing M, dQ/dv and K_t on their stores (the transient's block path)
    against the dense one at a deformed, moving state: every entry equal (bitwise: the same
    operations), nothing of the dense ones off the structure, Q and the rows the same."""
    from sim.kernels.common import by_reference
    from sim.kernels.equations import evaluate
    path, params, pulled = STORE_CASES[name]
    model = load_model(path, params)
    ev = Evaluator(model)
    t, n_v, n_rows = ev.tables, ev.n_v, ev.n_rows
    kept = np.arange(ev.n_joint)
    m = n_v + kept.size
    pat = blocks.pattern(t, kept, np.zeros((0, 0)), m, blocks.blocks(t.body_v, t.body_nf, m).ranges)
    assert pat.ptr.size == m + 1
    stores = blocks.stores(t, pat, True)
    rng = np.random.default_rng(2)
    q = model.q_home + 1e-3 * rng.normal(size=model.q_home.size)     # elastic coordinates too
    v = rng.normal(size=n_v)
    targets = 0.01 * rng.normal(size=n_rows - ev.n_joint) if pulled else np.zeros(0)
    assert not pulled or t.ca_idx.size

    def out(M, G, Kt):
        return (M, np.zeros(n_v), np.zeros(0), np.zeros(n_rows), np.zeros((n_rows, n_v)), np.zeros(n_rows), G,
                np.zeros((n_rows, n_v)), Kt)
    dense = out(*(np.zeros((n_v, n_v)) for _ in range(3)))
    held = out(*(by_reference(s) for s in stores))
    for x in (dense, held):
        evaluate(q, v, ev.ref, ev.data_ref, x, targets, (True, True, False, True))
    cols = np.repeat(np.arange(m), np.diff(pat.ptr))
    on = (pat.rows < n_v) & (cols < n_v)
    for A, S in zip((dense[0], dense[6], dense[8]), stores):
        B = np.zeros((n_v, n_v))
        B[pat.rows[on], cols[on]] = S.values[on]
        assert np.array_equal(A, B), np.abs(A - B).max()
        assert not S.values[~on].any()
    assert np.abs(dense[8]).max() > 0 or name == "rrru3"
    for k in (1, 3, 4, 5, 7):
        assert np.array_equal(dense[k], held[k])
