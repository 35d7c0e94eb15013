r"""A rigid link on a geared servo axis (test model nobody tuned for).

A rigid bar (``mass`` kg, length ``length`` m, along x) turns about world z at the origin on
a revolute joint driven by a motor of rotor inertia ``rotor`` [kg m^2] through a gear of ratio
``gear``; its inertia about the axis is ``J_l = mass length^2 / 3``, the axis sees
``J = J_l + gear^2 rotor``.  With ``k_drive`` [N m/rad] the transmission is a torsional spring
between the motor and the joint (a two-inertia drive).  The end effector is the tip's angle
``rz``; ``gravity`` [m/s^2] along -y (in the plane the link turns in; default none).
"""
import numpy as np

from sim import ModelBuilder


def build(mass=2.0, length=0.5, rotor=3e-5, gear=50.0, k_drive=None, gravity=0.0):
    b = ModelBuilder("servo_axis", gravity=(0.0, -gravity, 0.0))
    # a bar: inertia about its centre m L^2 / 12 about y and z, a thin rod's small one about x
    b.add_rigid_body("link", mass, (length / 2, 0, 0), np.diag([1e-6, 1.0, 1.0]) * mass * length**2 / 12)
    b.add_marker("base", None, (0, 0, 0))
    b.add_marker("hub", "link", (0, 0, 0))
    b.add_marker("tip", "link", (length, 0, 0))
    b.add_joint("axis", "revolute", "base", "hub")
    b.add_actuator("motor", "axis", stiffness=k_drive, rotor_inertia=rotor, gear_ratio=gear)
    b.set_end_effector("tip", ("rz",))
    return b.build()
