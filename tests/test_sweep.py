"""Sweeps: same numbers through the local pool and a Dask LocalCluster; failures are data."""
import os
from pathlib import Path

import numpy as np
import pytest

from sim.solvers.cases import modes_case, run_cases

BEAM = str(Path(__file__).resolve().parent.parent / "models" / "beam.py")


def _cases():
    # 99 geometrically similar beams and one invalid length that must fail without stopping the sweep
    lengths = np.linspace(0.5, 1.5, 99)
    return [(BEAM, {"length": float(L), "width": 0.02 * L, "height": 0.01 * L, "elements": 4}, None, 2)
            for L in lengths] + [(BEAM, {"length": -1.0}, None, 2)]


@pytest.fixture(scope="module")
def local_results():
    return run_cases(modes_case, _cases(), workers=2)


def test_failed_case_is_recorded(local_results):
    assert not local_results[-1].ok and "length" in local_results[-1].error, local_results[-1].error
    assert all(r.ok for r in local_results[:-1]), "valid cases must succeed"


def test_frequencies_scale_with_size(local_results):
    # geometric similarity: every frequency of the discretised beam scales exactly as 1/L
    f = np.array([r.value for r in local_results[:-1]])
    L = np.linspace(0.5, 1.5, 99)[:, None]
    np.testing.assert_allclose(f * L, np.broadcast_to(f[0] * L[0], f.shape), rtol=1e-9, err_msg="f L invariance")


def test_dask_local_cluster_gives_identical_numbers(local_results):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = run_cases(modes_case, _cases(), scheduler=client)
        pids = set(client.run(os.getpid).values())
    assert len(pids) == 2, "both workers (cores) must be used"
    for a, b in zip(local_results, remote):
        assert a.ok == b.ok
        if a.ok:
            assert np.array_equal(a.value, b.value), f"case {a.index} differs between pool and Dask"


def test_unreachable_scheduler_is_one_line_error(monkeypatch):
    from sim.solvers import cases
    from sim.errors import SimError
    monkeypatch.setattr(cases, "CONNECT_TIMEOUT", 1.0)      # the default 10 s would only slow the test
    with pytest.raises(SimError, match="Dask scheduler"):
        run_cases(modes_case, _cases()[:3], scheduler="tcp://127.0.0.1:1")


@pytest.mark.parametrize("joint", ["universal", "spherical"])
def test_pose_map_continuation_matches_modes_at_each_pose(joint):
    """6-PSS frequency map (compliant ball-screw drives; spherical slider joints: struts that
    spin freely): every grid pose reached and regular, and the continuation's frequencies (the
    compiled solvers of the KED's frames, warm-started pose to pose) those of a modal analysis
    at the pose solved from home."""
    from sim.analyses.sweep import rows_frequencies
    from sim.model.assembly import solve_pose
    from sim.model.loader import load_model
    from sim.solvers.modal import modes

    pss6 = str(Path(BEAM).parent / "pss6.py")
    params = {"slider_joint": joint}
    model = load_model(pss6, params)
    values = [np.linspace(-0.05, 0.05, 3), np.linspace(-0.04, 0.04, 3)]
    freqs = rows_frequencies(pss6, params, [0, 1], values, model.pose_home, [0, 1, 2], 3)
    assert np.isfinite(freqs).all(), "grid poses near home are reachable and regular"
    for i, x in enumerate(values[0]):
        for j, y in enumerate(values[1]):
            pose = model.pose_home.copy()
            pose[:2] = x, y
            ref = modes(model, solve_pose(model, pose), 3, energies=False).frequencies_hz
            np.testing.assert_allclose(freqs[i, j], ref, rtol=1e-9, err_msg=f"pose ({x}, {y})")
