"""Delta robot with flexible parallelograms (test model nobody tuned for: ball-jointed rods
whose spins are free motions).

Three rigid upper arms (0.25 m, 0.4 kg) turn about tangential shoulder axes at 0.2 m from the
axis, 120 deg apart (the actuated joints).  Each forearm is a parallelogram of two aluminium
rods (tube 10 x 1 mm, 0.5 m, ``elements`` beam elements, 60 mm apart; or six counts, one per
rod, in the order ``rod0l, rod0r, rod1l, ...``: rods of different counts are body groups of their
own) with spherical joints at
both ends, on a 0.3 kg platform at 0.05 m.  End-effector coordinates ``x y z`` (the
parallelograms keep the platform's orientation); each rod spins freely about its axis: six
free motions of the structure with the arms locked.

``forearm = "rod"``: one rod per forearm instead of the parallelogram, ball-jointed at both ends
(a common simplification): the arms then leave the platform free to turn, three free motions
that move the end effector besides the three rods' spins.  ``declared``: declare that many free
motions intended (:meth:`sim.ModelBuilder.declare_free_motions`).
"""
import numpy as np

from sim import ModelBuilder, Section

R_BASE, R_PLAT, L_ARM, L_ROD, WIDTH = 0.20, 0.05, 0.25, 0.50, 0.06     # m
M_ARM, M_PLAT = 0.4, 0.3                                              # kg
E, RHO, NU = 70e9, 2700.0, 0.33
R_OUT, WALL = 0.005, 0.001
ANGLES = np.radians([0.0, 120.0, 240.0])
HEIGHT = -np.sqrt(L_ROD**2 - (R_BASE + L_ARM - R_PLAT) ** 2)           # platform at home, arms level
ARM_INERTIA = M_ARM * L_ARM**2 / 12      # kg m^2 about its centre, across the arm


def build(elements=2, forearm="parallelogram", declared=0):
    counts = iter(np.broadcast_to(np.asarray(elements, dtype=int), 6).tolist())
    rod = Section.tube(R_OUT, WALL, E=E, rho=RHO, nu=NU)
    b = ModelBuilder("delta_rods", gravity=(0.0, 0.0, -9.81))
    b.add_rigid_body("platform", M_PLAT, (0, 0, HEIGHT), 2e-4 * np.eye(3), position=(0, 0, HEIGHT))
    b.add_marker("P", "platform", (0, 0, HEIGHT))
    up = np.array([0.0, 0.0, 1.0])
    for i, t in enumerate(ANGLES):
        radial, tangent = np.array([np.cos(t), np.sin(t), 0.0]), np.array([-np.sin(t), np.cos(t), 0.0])
        A, B, C = R_BASE * radial, (R_BASE + L_ARM) * radial, R_PLAT * radial + HEIGHT * up
        inertia = ARM_INERTIA * (np.eye(3) - np.outer(radial, radial))
        b.add_rigid_body(f"arm{i}", M_ARM, 0.5 * (A + B), inertia, position=A)
        axes = np.column_stack([radial, -up, tangent])        # z: the shoulder axis
        b.add_marker(f"A0{i}", None, A, axes)
        b.add_marker(f"A{i}", f"arm{i}", A, axes)
        b.add_joint(f"A{i}", "revolute", f"A0{i}", f"A{i}")
        b.add_actuator(f"theta{i}", f"A{i}")
        for side, s in (("l", -0.5), ("r", 0.5)) if forearm == "parallelogram" else (("c", 0.0),):
            name, Bs, Cs = f"rod{i}{side}", B + s * WIDTH * tangent, C + s * WIDTH * tangent
            n = next(counts)
            b.add_beam_body(name, np.linspace(Bs, Cs, n + 1), np.column_stack([np.arange(n), np.arange(1, n + 1)]),
                            rod, z_ref=tangent, clamp=0)
            b.add_marker(f"B{i}{side}a", f"arm{i}", Bs)
            b.add_marker(f"B{i}{side}b", name, Bs)
            b.add_joint(f"B{i}{side}", "spherical", f"B{i}{side}a", f"B{i}{side}b")
            b.add_marker(f"C{i}{side}a", name, Cs)
            b.add_marker(f"C{i}{side}b", "platform", Cs)
            b.add_joint(f"C{i}{side}", "spherical", f"C{i}{side}a", f"C{i}{side}b")
    b.set_end_effector("P", ("x", "y", "z"))
    if declared:
        b.declare_free_motions(declared, "the platform turns on its ball-jointed rods")
    return b.build()
