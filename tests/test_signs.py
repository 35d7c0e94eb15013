"""The sign convention of mode shapes (sim.solvers.modal.signs): each shape's entry of largest
magnitude positive at a configuration, and along a motion the sign of the previous frame's
shape where a frame's mode is the same mode (sim.solvers.frames._orient), so that a mode and
KED's modal coordinates do not change sign between frames, runs or code changes."""
import sim  # noqa: F401  (single-threaded BLAS before numpy)

import numpy as np
import pytest

from sim.model.loader import load_model
from sim.solvers.frames import FIELDS, Frames, _orient, frames_along
from sim.solvers.modal import SAME_MODE, SIGN_TIE_RTOL, modes, signs
from sim.solvers.motion import rigid_motion
from sim.solvers.trajectory import circle

from conftest import MODELS

SHIPPED = ("navaro", "rrru3", "five_bar", "delta_pick", "delta_surgiscope", "flexible_arm", "four_bar",
           "slider_crank", "spinup_beam", "pss6", "beam")      # rrrt3: rigid, no elastic mode


def _lead(shapes):
    """Each column's deciding entry (n, r) -> (r,): the first within SIGN_TIE_RTOL of its largest magnitude."""
    A = np.abs(shapes)
    first = np.argmax(A >= (1 - SIGN_TIE_RTOL) * A.max(axis=0), axis=0)
    return shapes[first, np.arange(shapes.shape[1])]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_models_modes_have_their_largest_entry_positive(name):
    """Every shipped model at home: each elastic mode shape's deciding entry is positive (and
    each free motion's), the shapes still mass-normalised."""
    from sim.model.dynamics import mass_matrix

    model = load_model(MODELS / f"{name}.py", {})
    r = modes(model, model.q_home, count=6)
    assert r.shapes.shape[1] > 0, name
    assert (_lead(r.shapes) > 0).all(), name
    if r.rigid_count:
        assert (_lead(r.rigid_shapes) > 0).all(), name
    M = mass_matrix(model, model.q_home)
    np.testing.assert_allclose(r.shapes.T @ M @ r.shapes, np.eye(r.shapes.shape[1]), atol=1e-9)


def test_a_flipped_eigenvector_comes_out_the_same():
    """``signs`` of any column flipped gives the same oriented column bitwise; ties within
    SIGN_TIE_RTOL go to the first entry (round-off between a symmetric shape's equal entries
    does not decide); a zero column keeps +1."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 40, 6))
    X[0, :, 5] = 0.0
    flip = rng.choice([-1.0, 1.0], size=(5, 6))
    Y = X * flip[:, None, :]
    assert np.array_equal(X * signs(X)[:, None, :], Y * signs(Y)[:, None, :])
    tied = np.array([[0.3], [-1.0], [1.0 + 1e-9], [0.2]])       # -1 first, +1 larger by round-off
    assert signs(tied)[0] == -1.0 and signs(-tied)[0] == 1.0
    assert signs(np.array([[0.3], [-1.0], [1.0 + 1e-3]]))[0] == 1.0
    assert np.array_equal(signs(X)[0, 5], 1.0)


@pytest.fixture(scope="module")
def rrru3_frames():
    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 2})
    motion = rigid_motion(model, circle([0.0, 0.0, -0.7], 0.1, 2.0, 1.0), np.linspace(0.0, 1.0, 61),
                          condition=False)
    return model, motion, frames_along(model, motion, 6, workers=1)


def test_frames_keep_each_modes_sign_along_the_motion(rrru3_frames):
    """The 3-RRRU's frames along an arc (three chunks, each a fresh start of the tracker):
    a mode that is the previous frame's (MAC above SAME_MODE) keeps its sign
    (``Phi_{k-1}^T M_k Phi_k > 0``), others have their largest entry positive; the first
    frame's by the largest entry.  (A near-degenerate pair, the 3-RRRU's 22.3/22.35 Hz, may
    turn within its plane: only its sign is fixed, by the same rule.)"""
    _, _, frames = rrru3_frames
    assert (_lead(frames.shapes[0]) > 0).all()
    kept = 0
    for k in range(1, len(frames)):
        c = np.einsum("ir,ir->r", frames.shapes[k - 1], frames.mass_shapes[k])
        same = c * c > SAME_MODE
        assert (c[same] > 0).all(), k
        assert (_lead(frames.shapes[k])[~same] > 0).all(), k
        kept += same.sum()
    assert kept >= 0.9 * (len(frames) - 1) * frames.omega.shape[1]     # the rule under test is the one used


def test_frames_signs_do_not_depend_on_the_solvers_signs(rrru3_frames):
    """Frames whose shapes come with arbitrary signs (some columns of some frames flipped, as
    another eigensolver or a code change may give) are oriented to the same frames bitwise."""
    _, motion, frames = rrru3_frames
    rng = np.random.default_rng(5)
    flip = rng.choice([-1.0, 1.0], size=frames.omega.shape)
    flipped = Frames(*(getattr(frames, n).copy() for n in ("load", "omega", "shapes", "mass_shapes",
                                                          "pose_jacobian", "static_load", "static_rest")))
    flipped.shapes[:] *= flip[:, None, :]
    flipped.mass_shapes[:] *= flip[:, None, :]
    assert not np.array_equal(flipped.shapes, frames.shapes)
    _orient(flipped)
    assert np.array_equal(flipped.shapes, frames.shapes) and np.array_equal(flipped.mass_shapes, frames.mass_shapes)


@pytest.mark.parametrize("chunk", [1, 7, 24])
def test_frames_oriented_chunk_by_chunk_are_the_frames_oriented_at_once(rrru3_frames, chunk):
    """``_orient`` of chunks, each after the last chunk's last (oriented) shapes -- as a KED
    streams its frames (FramePool with ``take``) -- gives every frame the signs of the whole
    motion oriented at once, bitwise: from arbitrary solver signs, and with an unfilled frame
    (no positive stiffness) in the middle of a chunk and at a chunk's end, after which both
    start afresh."""
    _, _, frames = rrru3_frames
    rng = np.random.default_rng(11)
    flip = rng.choice([-1.0, 1.0], size=frames.omega.shape)

    def scrambled():
        out = Frames(*(getattr(frames, n).copy() for n in FIELDS))
        out.shapes[:] *= flip[:, None, :]
        out.mass_shapes[:] *= flip[:, None, :]
        out.omega[[10, 2 * chunk - 1]] = 0.0      # unfilled
        return out

    whole = _orient(scrambled())
    parts = scrambled()
    previous = None
    for c0 in range(0, len(parts), chunk):
        rows = slice(c0, c0 + chunk)
        piece = Frames(*(getattr(parts, n)[rows] for n in FIELDS))      # views: oriented in place
        _orient(piece, previous)
        previous = piece.shapes[-1] if piece.omega[-1, 0] > 0 else None
    assert np.array_equal(parts.shapes, whole.shapes) and np.array_equal(parts.mass_shapes, whole.mass_shapes)
    first = min(10, 2 * chunk - 1)      # before the first unfilled frame: the motion's own signs
    assert np.array_equal(whole.shapes[:first], frames.shapes[:first])


def test_servo_frames_keep_each_modes_sign():
    """The servo KED's frames (the robot held by its servos, sim.solvers.servo_stepping): the
    same convention along the motion, on the extended coordinates (rotors included), and the
    signed shapes still mass-normalised."""
    from sim.solvers import closed_loop as sv
    from sim.solvers.damping import Damping
    from sim.solvers.servo_stepping import servo_frames
    from sim.solvers.trajectory import from_scenario

    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 2, "rotor_inertia": 1.2e-4, "gear_ratio": 50.0})
    servo = sv.Servo.from_table(dict(kp=100.0, kv=60.0, ki=20.0, feedforward="velocity"), model)
    trajectory = from_scenario(dict(kind="circle", center=[0.0, 0.0, -0.7], radius=0.1, omega=2.0, duration=0.5),
                               model)
    motion = rigid_motion(model, trajectory, np.linspace(0.0, 0.5, 9), condition=False)
    frames = servo_frames(model, motion, servo, Damping(), 6)
    assert (_lead(frames.shapes[0]) > 0).all()
    for k in range(1, len(frames.omega)):
        c = np.einsum("ir,ir->r", frames.shapes[k - 1], frames.mass_shapes[k])
        same = c * c > SAME_MODE
        assert (c[same] > 0).all() and (_lead(frames.shapes[k])[~same] > 0).all(), k
        np.testing.assert_allclose(frames.shapes[k].T @ frames.mass_shapes[k], np.eye(6), atol=1e-9)


def test_complex_shapes_come_out_the_same_whatever_their_phase():
    """``phased``: complex shapes multiplied by any factors come out the same (to round-off),
    unit norm, each leading entry real and positive; two entries equal in magnitude to
    round-off: the first decides, whichever is larger by a few ulps; a zero column stays zero."""
    from sim.solvers.modal import phased

    rng = np.random.default_rng(3)
    Z = rng.normal(size=(7, 4)) + 1j * rng.normal(size=(7, 4))
    Z[:, 3] = 0.0
    a = phased(Z)
    b = phased(Z * (rng.uniform(0.1, 10.0, 4) * np.exp(2j * np.pi * rng.uniform(size=4))))
    np.testing.assert_allclose(a, b, atol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(a[:, :3], axis=0), 1.0, rtol=1e-14)
    lead = _lead(a[:, :3])
    assert np.all(np.abs(lead.imag) < 1e-15) and np.all(lead.real > 0)
    assert not a[:, 3].any()
    tie = np.array([[1.0 + 0j], [-1.0j * (1 + 1e-15)]])     # the second larger by round-off
    np.testing.assert_allclose(phased(tie)[:, 0], np.array([1.0, -1.0j]) / np.sqrt(2), atol=1e-15)
