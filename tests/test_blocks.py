"""The block factorisation of the transient's iteration matrix (sim.solvers.blocks, issue 41):
the same solutions as the dense LU, to round-off for one solve and to the Newton tolerance
over a run, on several models, with and without the low-rank modal damping; the choice of the
path by size."""
import numpy as np
import pytest

from sim.model.evaluator import Evaluator
from sim.model.loader import load_model
from sim.solvers import blocks
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


# Newton to well below the compared differences: the two paths' round-off then moves the last
# iterate by far less than the tolerance.
NEWTON_TOL = 1e-13


def _run(model, solver, steps, damping=None, h=None):
    ev = Evaluator(model)
    h = h or next(step for path, _, step in MODELS.values() if model.name in path)
    g = Newmark(ev, Drive("free"), 0.0, model.q_home, _start(model, ev), h,
                Options(solver=solver, newton_tol=NEWTON_TOL), damping=damping)
    g.advance(steps)
    assert g.status == "running", g.message
    return g


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
    # After a blocked factorisation, work.known holds the matrix it factorised (known + delta);
    # the low-rank damping is added as the dense path adds it.
    A = w.known.copy()
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
    their largest (Newton's tolerance is 1e-13 m here: the two paths' round-off moves the last
    iterate by far less)."""
    model = _model(name)
    damping = _schedule(model) if name == "rrru3" else None
    dense, block = (_run(model, s, 200, damping) for s in ("dense", "block"))
    assert dense.n_blocked == 0 and block.n_blocked >= 1
    # The round-off of the two paths can move a convergence test by one iteration
    assert abs(dense.n_iterations - block.n_iterations) <= 0.01 * dense.n_iterations
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
