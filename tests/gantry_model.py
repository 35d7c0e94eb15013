r"""Gantry (test model nobody tuned for): a driven prismatic joint and a fixed joint.

A 2 kg carriage slides along world x on a driven prismatic joint and carries, through a fixed
joint, a hanging mast: an aluminium tube (30 x 1.5 mm, 0.5 m, ``elements`` beam elements,
in-plane coordinates) with a ``tip_mass`` at its lower end, the end effector (x).
"""
import numpy as np
from sim import ALUMINIUM, ModelBuilder, Section


def build(elements=8, tip_mass=1.0, planar=True, g=9.81):
    b = ModelBuilder("gantry", gravity=(0.0, 0.0, -g))
    along_x = np.array([[0.0, 1, 0], [0, 0, 1.0], [1.0, 0, 0]]).T   # marker axes: z along world x
    top, tip = np.zeros(3), np.array([0.0, 0.0, -0.5])
    b.add_rigid_body("carriage", 2.0, (0, 0, 0.05), np.diag([4e-3, 4e-3, 4e-3]), position=top)
    b.add_beam_body("mast", np.linspace(top, tip, elements + 1),
                    np.column_stack([np.arange(elements), np.arange(1, elements + 1)]),
                    Section.tube(0.015, 0.0015, material=ALUMINIUM), z_ref=(0, 1, 0),
                    plane=(0, 1, 0) if planar else None)
    b.add_point_mass("mast", tip_mass, node=elements)
    b.add_marker("rail", None, top, along_x)
    b.add_marker("slider", "carriage", top, along_x)
    b.add_marker("C_top", "carriage", top)
    b.add_marker("M_top", "mast", top)
    b.add_marker("tip", "mast", tip)
    b.add_joint("rail", "prismatic", "rail", "slider")
    b.add_joint("clamp", "fixed", "C_top", "M_top")
    b.add_actuator("x", "rail")
    b.set_end_effector("tip", ("x",))
    return b.build()
