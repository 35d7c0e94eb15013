r"""Spin-up beam (Simo & Vu-Quoc 1986): a flexible beam clamped to a hub driven about z.

    y
    |   hub (driven revolute about z, angle theta(t))
    o====================================================  tip   -> x (at t = 0)
    O            beam, L = 10 m, clamped to the hub at O

Sources (J. C. Simo, L. Vu-Quoc, "On the dynamics of flexible beams under large overall
motions -- the plane case", J. Appl. Mech. 53 (1986) 849-863): L = 10 m, rho A = 1.2 kg/m,
E I = 1.4e4 N m^2, E A = 2.8e7 N; spin-up law theta(t) = (omega_s / T) (t^2 / 2 + (T / 2 pi)^2
(cos(2 pi t / T) - 1)) for t < T, omega_s (t - T / 2) after, T = 15 s, omega_s = 4 rad/s (given
as the scenario's ``[transient] drive_law``).  First clamped bending frequency
1.8751^2 sqrt(E I / (rho A L^4)) = 3.80 rad/s.  A linear FFR beam has no centrifugal stiffening
and its bending softens by -Omega^2 (the centrifugal "spin softening" of the reference-frame
terms): past ~3.80 rad/s the tip deflection grows without bound.  ``stiffening=True`` (default)
adds the geometric stiffening of the axial force (second-order axial strain, sim.model.dynamics),
which keeps it bounded, as in Simo & Vu-Quoc's geometrically exact solution.

*Assumed*: a square solid section h x h with h^2 / 12 = E I / E A (so A = h^2,
E = E A / A, rho = rho A / A reproduce rho A, E I and E A), nu = 0.3; the
hub is a small rigid body (0.1 kg, inertia 0.01 kg m^2) since its motion is prescribed;
no gravity.  End-effector coordinates: tip ``x y``.  Sensor ``tip_deflection``: the tip's
transverse deflection in the rotating hub frame (along the hub's y axis) [m].
"""
import numpy as np

from sim import ModelBuilder, Section

LENGTH = 10.0
RHO_A = 1.2
EI = 1.4e4
EA = 2.8e7


def build(elements=10, length=LENGTH, rho_A=RHO_A, EI=EI, EA=EA, nu=0.3, stiffening=True):
    """Spin-up beam at theta = 0.

    Parameters
    ----------
    elements : int
        Beam elements.
    length : float
        [m].
    rho_A, EI, EA : float
        Mass per length [kg/m], bending stiffness [N m^2], axial stiffness [N].
    nu : float
        Poisson's ratio (torsion only).
    stiffening : bool
        Geometric (centrifugal) stiffening of the beam (second-order axial strain).  Without
        it the linear FFR beam softens without bound past its first bending frequency.
    """
    n = int(elements)
    if n != elements or n < 1:
        raise ValueError(f"`elements` must be a positive integer, got {elements!r}")
    for name, value in (("length", length), ("rho_A", rho_A), ("EI", EI), ("EA", EA)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"`{name}` must be positive, got {value!r}")
    # Square section h x h: A = h^2, I = h^4 / 12, so EI / EA = h^2 / 12.
    h = np.sqrt(12.0 * EI / EA)
    area = h * h
    E = EA / area
    rho = rho_A / area
    section = Section.rectangle(h, h, E=E, rho=rho, nu=nu)
    nodes = np.zeros((n + 1, 3))
    nodes[:, 0] = np.linspace(0.0, length, n + 1)
    b = ModelBuilder("spinup_beam", gravity=(0.0, 0.0, 0.0))
    b.add_rigid_body("hub", 0.1, np.zeros(3), 0.01 * np.eye(3))
    b.add_beam_body("beam", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]), section,
                    z_ref=(0, 0, 1), clamp=0, stiffening=stiffening)
    b.add_marker("O_ground", None, np.zeros(3))
    b.add_marker("O_hub", "hub", np.zeros(3))
    b.add_marker("hub_x", "hub", np.array([length, 0.0, 0.0]))
    b.add_marker("root", "beam", np.zeros(3))
    b.add_marker("tip", "beam", nodes[n])
    b.add_joint("hub", "revolute", "O_ground", "O_hub")
    b.add_joint("clamp", "fixed", "O_hub", "root")
    b.add_actuator("hub_angle", "hub")
    b.add_sensor("tip_deflection", "deflection", ("O_hub", "tip", "hub_x"), axis=1, units="m",
                 description="tip deflection along the hub's y axis, in the rotating hub frame")
    b.set_end_effector("tip", ("x", "y"))
    b.notes = "Simo-Vu-Quoc spin-up beam"
    return b.build()
