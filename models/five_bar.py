r"""Planar five-bar pick-and-place robot with flexible distal links (a robot nobody tuned for).

Two actuated revolutes at the base, ``A_1 = (-d/2, 0, 0)`` and ``A_2 = (d/2, 0, 0)``, all
joint axes along world z (the robot works in the horizontal x–y plane, gravity along -z)::

                      P  o   end effector: revolute between the two distal links
                        / \
       distal link 1   /   \   distal link 2 (0.3 m aluminium tubes, FLEXIBLE, FFR beams)
                      /     \
                 B_1 o       o B_2      passive revolutes
                      \     /
     proximal link 1   \   /   proximal link 2 (0.25 m, rigid), actuated revolutes A_1, A_2
                        o o
                      A_1 A_2   (0.2 m apart)

Home posture: ``P = (0, 0.35, 0)`` m, elbows out (``B_1`` left of ``A_1 P``, ``B_2`` right of
``A_2 P``).  Planar mechanism built from spatial revolutes: the loop's out-of-plane rows are
redundant for the rigid robot, and the distal tubes bend both in the plane (driven by the
in-plane inertia forces) and out of it (gravity).

End-effector coordinates: ``x y`` (the robot's two degrees of freedom) and, with
``out_of_plane = True`` (default), ``z`` as well: a coordinate the rigid robot keeps constant
(its row in the inverse kinematics is redundant), declared so that the out-of-plane sag and
vibration of the end effector are reported with the in-plane deviation.  Any planar robot adds
its out-of-plane coordinates the same way: list them in ``set_end_effector`` after the in-plane
ones, and give the trajectory's ``center`` a value for each.

Data (all *assumed*, a generic light pick-and-place design): proximal links 0.25 m, 0.35 kg,
slender rods; distal links 0.3 m aluminium tubes (outer radius 10 mm, wall 1 mm, E = 70 GPa,
rho = 2700 kg/m^3, nu = 0.33), 4 elements each, clamped at ``B_i``; end-effector mass 0.1 kg
on distal link 1 at ``P``.  Sensors: mid-span deflections of the two distal tubes from their
chords, in the plane.
"""
import numpy as np

from sim import ModelBuilder, Section

HOME = np.array([0.0, 0.35, 0.0])


def _elbow(a, p, l_a, l_b, sign):
    """Point at distance ``l_a`` from ``a`` and ``l_b`` from ``p`` in the x–y plane, on the
    side ``sign`` (+1 left, -1 right) of the line from ``a`` to ``p``."""
    d = np.linalg.norm(p - a)
    if not abs(l_a - l_b) < d < l_a + l_b:
        raise ValueError(f"home end-effector position {p.tolist()} is out of reach")
    u = (p - a) / d
    n = np.array([-u[1], u[0], 0.0])
    x = (d**2 + l_a**2 - l_b**2) / (2 * d)
    return a + x * u + sign * np.sqrt(l_a**2 - x**2) * n


def _rod_inertia(mass, p, q):
    """World inertia about the centre of a slender rod from ``p`` to ``q`` (1e-3 of the
    transverse value about its axis)."""
    e = (q - p) / np.linalg.norm(q - p)
    I_t = mass * np.sum((q - p) ** 2) / 12.0
    return I_t * (np.eye(3) - np.outer(e, e)) + 1e-3 * I_t * np.outer(e, e)


def build(elements_per_link=4, base_distance=0.2, proximal_length=0.25, distal_length=0.3,
          proximal_mass=0.35, end_effector_mass=0.1, outer_radius=0.01, wall=0.001, E=70e9, rho=2700.0,
          nu=0.33, gravity=9.81, out_of_plane=True):
    """Five-bar robot at its home posture.

    Parameters
    ----------
    elements_per_link : int
        Beam elements along each distal tube.
    base_distance, proximal_length, distal_length : float
        Distance between the actuated revolutes and link lengths [m].
    proximal_mass, end_effector_mass : float
        Mass of each rigid proximal link and of the end-effector payload [kg].
    outer_radius, wall : float
        Distal tube section [m].
    E, rho, nu : float
        Tube material: Young's modulus [Pa], density [kg/m^3], Poisson's ratio.
    gravity : float
        Gravity along -z [m/s^2] (0: none).
    out_of_plane : bool
        Also report the end effector's ``z`` (out of the robot's plane).
    """
    n = int(elements_per_link)
    if n != elements_per_link or n < 1:
        raise ValueError(f"`elements_per_link` must be a positive integer, got {elements_per_link!r}")
    tube = Section.tube(outer_radius, wall, E=E, rho=rho, nu=nu)
    b = ModelBuilder("five_bar", gravity=(0.0, 0.0, -gravity))
    P = HOME
    for i, (x, side) in enumerate(((-0.5 * base_distance, 1.0), (0.5 * base_distance, -1.0)), start=1):
        A = np.array([x, 0.0, 0.0])
        B = _elbow(A, P, proximal_length, distal_length, side)
        b.add_rigid_body(f"proximal_{i}", proximal_mass, 0.5 * (A + B), _rod_inertia(proximal_mass, A, B),
                         position=A, substructure="proximal links")
        nodes = np.linspace(B, P, n + 1)
        b.add_beam_body(f"distal_{i}", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]), tube,
                        z_ref=(0.0, 0.0, 1.0), clamp=0, substructure="distal tubes")
        b.add_marker(f"A0_{i}", None, A)
        b.add_marker(f"A_{i}", f"proximal_{i}", A)
        b.add_marker(f"B1_{i}", f"proximal_{i}", B)
        b.add_marker(f"B2_{i}", f"distal_{i}", B)
        b.add_marker(f"P_{i}", f"distal_{i}", P)
        b.add_joint(f"A_{i}", "revolute", f"A0_{i}", f"A_{i}")
        b.add_joint(f"B_{i}", "revolute", f"B1_{i}", f"B2_{i}")
        b.add_actuator(f"theta_{i}", f"A_{i}")
        if n % 2 == 0:
            axis = np.array([-(P - B)[1], (P - B)[0], 0.0]) / distal_length
            frame = np.column_stack([(P - B) / distal_length, axis, [0.0, 0.0, 1.0]])
            b.add_marker(f"distal_start_{i}", f"distal_{i}", B, frame)
            b.add_marker(f"distal_mid_{i}", f"distal_{i}", nodes[n // 2])
            b.add_sensor(f"distal{i}_midspan_deflection", "deflection", (f"distal_start_{i}", f"distal_mid_{i}", f"P_{i}"),
                         axis=1, units="m", description=f"distal tube {i}: mid-node distance from its chord, in the plane")
    b.add_point_mass("distal_1", end_effector_mass, node=n)
    b.add_joint("P", "revolute", "P_1", "P_2")
    b.set_end_effector("P_1", ("x", "y", "z") if out_of_plane else ("x", "y"))
    b.notes = "planar five-bar, flexible distal tubes (assumed data)"
    return b.build()
