r"""Two-link arm in the vertical x-z plane (test model nobody tuned for: its home is singular).

A rigid upper arm (0.3 m, 1.2 kg) turns about world y at the shoulder O; a flexible forearm
(aluminium tube 12 x 1.5 mm, 0.35 m, ``elements`` beam elements, in-plane coordinates) turns
about world y at the elbow E and carries a 0.5 kg point mass at its tip T, the end effector
(x, z).  Both revolutes are actuated.  At home the arm is stretched out along x: a singular
configuration of its inverse kinematics (the tip cannot move along the arm), which the rigid
motion must not take for the robot's rank.
"""
from pathlib import Path

import numpy as np

from sim import ALUMINIUM, ModelBuilder, Section


def scenario(duration, tables):
    """Scenario text: this arm's tip on a 5 cm circle at 12 rad/s for ``duration`` [s], with
    the analysis ``tables`` (TOML text) appended."""
    return f"""name = "two_link_arm"
[model]
file = "{Path(__file__).as_posix()}"
[trajectory]
kind = "circle"
center = [0.45, -0.2]
radius = 0.05
omega = 12.0
duration = {duration}
""" + tables


def build(elements=6, tip_mass=0.5, section_sensor=False):
    b = ModelBuilder("two_link_arm", gravity=(0.0, 0.0, -9.81))
    about_y = np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]]).T   # marker axes: z along world -y
    O, E, T = np.zeros(3), np.array([0.3, 0, 0]), np.array([0.65, 0, 0])
    b.add_rigid_body("upper", 1.2, 0.5 * E, np.diag([1e-4, 1e-2, 1e-2]), position=O)
    b.add_beam_body("fore", np.linspace(E, T, elements + 1),
                    np.column_stack([np.arange(elements), np.arange(1, elements + 1)]),
                    Section.tube(0.012, 0.0015, material=ALUMINIUM), z_ref=(0, 1, 0), plane=(0, 1, 0))
    b.add_point_mass("fore", tip_mass, node=elements)
    b.add_marker("O_ground", None, O, about_y)
    b.add_marker("O_upper", "upper", O, about_y)
    b.add_marker("E_upper", "upper", E, about_y)
    b.add_marker("E_fore", "fore", E, about_y)
    b.add_marker("mid", "fore", 0.5 * (E + T), about_y)
    b.add_marker("tip", "fore", T, about_y)
    b.add_joint("shoulder", "revolute", "O_ground", "O_upper")
    b.add_joint("elbow", "revolute", "E_upper", "E_fore")
    b.add_actuator("shoulder", "shoulder")
    b.add_actuator("elbow", "elbow")
    b.add_sensor("fore_deflection", "deflection", ("E_fore", "mid", "tip"), axis=1)
    if section_sensor:    # the bending moment at the forearm's root (about its local z, world y: in the plane)
        b.add_sensor("fore_root_moment", "section", ("E_fore",), axis="Mz")
    b.set_end_effector("tip", ("x", "z"))
    return b.build()
