"""Shared fixtures: built models (once per session), finite differences, random states.

Models are loaded by path, as users load them (``sim.model.loader.load_model``).  The random
configurations are *not* assembled: they are the home configuration moved on the manifold by
:func:`sim.model.kinematics.integrate` along a random increment that includes the elastic
coordinates, which is what the pointwise invariants (mass matrix, Jacobians) need.
"""
import os

# The matrices here are small (n_v < 1000) and the suite runs in parallel workers
# (``pytest -n 2``): several BLAS threads per worker oversubscribe the cores and make
# every factorisation an order of magnitude slower.  Set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from functools import lru_cache  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from sim.model.beam import Section  # noqa: E402
from sim.model.kinematics import integrate  # noqa: E402
from sim.model.loader import load_model  # noqa: E402
from sim.model import ModelBuilder  # noqa: E402

ROOT = Path(__file__).parent.parent
MODELS = ROOT / "models"

#: Slender beam of the convergence studies (1 m, 10 mm (y) x 5 mm (z), steel): the section
#: rotary inertia shifts the frequencies by ~(r/L)^2 (beta L)^2 / 2 < 1e-3, below the 0.5 %
#: tolerance, while the element still converges to the Rayleigh beam it discretises.
SLENDER_BEAM = dict(length=1.0, width=0.01, height=0.005, E=2.1e11, rho=7800.0, nu=0.3)

#: Scales of the random increments: reference translation [m], rotation [rad], elastic
#: coordinate [m or rad]; velocities [m/s], [rad/s], [m/s or rad/s].
DQ_SCALE = (0.05, 0.5, 2e-3)
V_SCALE = (0.5, 2.0, 0.2)


def model_path(name):
    """Path of ``models/<name>.py``."""
    return MODELS / f"{name}.py"


@lru_cache(maxsize=None)
def _load(name, params):
    return load_model(model_path(name), dict(params))


def load(name, **params):
    """Model ``models/<name>.py`` built with ``params``; built once per (name, params)."""
    return _load(name, tuple(sorted(params.items())))


def slender_beam(support, elements):
    """The slender benchmark beam of ``models/beam.py`` (see ``SLENDER_BEAM``)."""
    return load("beam", support=support, elements=elements, **SLENDER_BEAM)


def central_difference(f, eps):
    """``(f(eps) - f(-eps)) / (2 eps)``: derivative at 0 of a function of one scalar."""
    return (np.asarray(f(eps), dtype=float) - np.asarray(f(-eps), dtype=float)) / (2.0 * eps)


def fd_jacobian(f, model, q, eps=1e-6):
    """Jacobian of ``f(q)`` with respect to ``v``: columns ``d f(q ⊕ s e_k) / ds`` at ``s = 0``.

    Returns an array of shape ``f(q).shape + (n_v,)``.
    """
    columns = []
    for k in range(model.n_v):
        e_k = np.zeros(model.n_v)
        e_k[k] = 1.0
        columns.append(central_difference(lambda s: f(integrate(model, q, s * e_k)), eps))
    return np.stack(columns, axis=-1)


def random_state(model, seed, elastic=1.0):
    """A random, unassembled configuration and velocity ``(q, v)`` near home.

    ``q = q_home ⊕ dv`` with ``dv`` drawn from a seeded normal distribution scaled by
    ``DQ_SCALE`` (reference translations, rotations, elastic coordinates); ``v`` scaled by
    ``V_SCALE``.  The elastic scales are multiplied by ``elastic``; ``elastic=0`` leaves the
    bodies undeformed (``q_f = 0``) and at rest relative to their frames.
    """
    rng = np.random.default_rng(seed)
    rigid = model.v_rigid.reshape(-1, 6)
    scale_q = np.zeros(model.n_v)
    scale_v = np.zeros(model.n_v)
    scale_q[rigid[:, :3]], scale_q[rigid[:, 3:]] = DQ_SCALE[0], DQ_SCALE[1]
    scale_v[rigid[:, :3]], scale_v[rigid[:, 3:]] = V_SCALE[0], V_SCALE[1]
    scale_q[model.v_elastic] = DQ_SCALE[2] * elastic
    scale_v[model.v_elastic] = V_SCALE[2] * elastic
    q = integrate(model, model.q_home, scale_q * rng.standard_normal(model.n_v))
    return q, scale_v * rng.standard_normal(model.n_v)


def free_flexible_body():
    """One unconstrained flexible body, no gravity: a bent beam structure with two sections,
    a skew element frame and a point mass with rotary inertia at the tip."""
    steel = Section.rectangle(0.03, 0.02, E=2.1e11, rho=7800.0, nu=0.3)
    alu = Section.rectangle(0.02, 0.04, E=7e10, rho=2700.0, nu=0.33)
    nodes = np.array([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.6, 0.05, 0.0], [0.6, 0.35, 0.1], [0.6, 0.6, 0.2]])
    elements = np.array([[0, 1], [1, 2], [2, 3], [3, 4]])
    b = ModelBuilder("free_body", gravity=(0.0, 0.0, 0.0))
    b.add_beam_body("body", nodes, elements, [steel, steel, alu, alu], z_ref=(0.2, -0.1, 1.0), clamp=1)
    b.add_point_mass("body", 0.8, inertia=np.diag([2e-3, 1e-3, 3e-3]), node=4)
    b.add_marker("tip", "body", nodes[4])
    b.set_end_effector("tip", ("x", "y", "z", "rx", "ry", "rz"))
    return b.build()


@pytest.fixture(scope="session")
def navaro():
    """NaVARo as published (one element per link, gravity on)."""
    return load("navaro")


@pytest.fixture(scope="session")
def navaro_module():
    """The NaVARo builder module (for ``POSES``)."""
    from sim.model.loader import load_module
    return load_module(model_path("navaro"))


@pytest.fixture(scope="session")
def flexible_arm():
    """The MacLean flexible arm with 16 elements."""
    return load("flexible_arm", elements=16)


@pytest.fixture(scope="session")
def free_body():
    return free_flexible_body()


@pytest.fixture(scope="session", params=["navaro", "flexible_arm"])
def robot(request):
    """Each closed-loop / jointed test model in turn."""
    return request.getfixturevalue(request.param)
