r"""Two flexible links in the horizontal x-y plane, both revolutes (about world z) actuated
(test model for the Cartesian stiffness: locked, it is a frame clamped at the shoulder whose
compliance has a closed form).

Link 1 (length ``a``) from the shoulder O along x to the elbow E; link 2 (length ``b``) from E
at ``elbow`` [rad] to x to the tip T, the end effector (x, y, rz; with ``rotation = False``
(x, y): the coordinates the two drives reach, for maps).  Steel rectangles 20 mm
(in the plane) x 10 mm, ``elements`` beam elements per link; no gravity.
"""
import numpy as np

from sim import STEEL, ModelBuilder, Section

SECTION = Section.rectangle(0.02, 0.01, STEEL)   # local y (in the plane) x local z (out of it)


def points(a=0.4, b=0.3, elbow=1.0):
    """Shoulder, elbow and tip (3,) [m] at home."""
    O, E = np.zeros(3), np.array([a, 0.0, 0.0])
    return O, E, E + b * np.array([np.cos(elbow), np.sin(elbow), 0.0])


def build(a=0.4, b=0.3, elbow=1.0, elements=3, rotation=True):
    O, E, T = points(a, b, elbow)
    m = ModelBuilder("planar_arm", gravity=(0.0, 0.0, 0.0))
    connect = np.column_stack([np.arange(elements), np.arange(1, elements + 1)])
    m.add_beam_body("link1", np.linspace(O, E, elements + 1), connect, SECTION, z_ref=(0, 0, 1))
    m.add_beam_body("link2", np.linspace(E, T, elements + 1), connect, SECTION, z_ref=(0, 0, 1))
    m.add_marker("O_ground", None, O)
    m.add_marker("O_1", "link1", O)
    m.add_marker("E_1", "link1", E)
    m.add_marker("E_2", "link2", E)
    m.add_marker("tip", "link2", T)
    m.add_joint("shoulder", "revolute", "O_ground", "O_1")
    m.add_joint("elbow", "revolute", "E_1", "E_2")
    m.add_actuator("shoulder", "shoulder")
    m.add_actuator("elbow", "elbow")
    m.set_end_effector("tip", ("x", "y", "rz") if rotation else ("x", "y"))
    return m.build()
