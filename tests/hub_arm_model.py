r"""An arm on a compliant geared motor with a bearing spring (test model nobody tuned for).

A flexible aluminium strip (1.2 m, 40 x 12 mm, ``elements`` beam elements, frame at its hub
node) turns about world z at the ground; a rigid tool (0.8 kg) is welded to its tip, and the
end effector is the tool's angle ``rz``.  The motor is compliant (``k_drive`` N m/rad, no rotor
inertia) and a torsional bearing spring (``k_bearing`` N m/rad, unloaded at angle 0) acts
beside it, so away from angle 0 the spring's preload is held by the motor's deflection:
at rest at angle ``theta`` the arm stands at ``theta k_drive / (k_drive + k_bearing)``.  Both
springs act on the hub node, whose small inertia against the first element's bending makes
a stiff local mode (about 10 kHz) that whips the floating frame when excited.  ``gravity``
[m/s^2] acts along -y, in the arm's plane.
"""
from pathlib import Path

import numpy as np

from sim import ModelBuilder, Section


def scenario(tables, period=0.5):
    """Scenario text: the tool's angle on a cycloid of 1 rad in ``period`` [s], starting at
    -0.5 rad, with the analysis ``tables`` (TOML text) appended."""
    return f"""name = "hub_arm"
[model]
file = "{Path(__file__).as_posix()}"
[trajectory]
kind = "cycloidal"
axes = ["rz"]
amplitude = 1.0
period = {period}
""" + tables


def build(length=1.2, elements=6, k_drive=4e3, k_bearing=150.0, gravity=0.0):
    section = Section.rectangle(0.04, 0.012, E=7e10, rho=2700.0, nu=0.33)
    nodes = np.zeros((elements + 1, 3))
    nodes[:, 0] = np.linspace(0.0, length, elements + 1)
    b = ModelBuilder("hub_arm", gravity=(0.0, -gravity, 0.0))     # in the arm's plane
    b.add_beam_body("link", nodes, np.column_stack([np.arange(elements), np.arange(1, elements + 1)]), section,
                    z_ref=(0, 0, 1), clamp=0)
    b.add_rigid_body("tool", 0.8, (length + 0.1, 0, 0), np.diag([1e-4, 3e-3, 3e-3]))
    b.add_marker("hub_ground", None, nodes[0])
    b.add_marker("hub", "link", nodes[0])
    b.add_marker("wrist_link", "link", nodes[-1])
    b.add_marker("wrist_tool", "tool", nodes[-1])
    b.add_marker("tip", "tool", (length + 0.2, 0, 0))
    b.add_joint("hub", "revolute", "hub_ground", "hub")
    b.add_joint("wrist", "fixed", "wrist_link", "wrist_tool")
    K = np.zeros((6, 6))
    K[5, 5] = k_bearing
    b.add_spring("bearing", "hub_ground", "hub", K)
    b.add_actuator("motor", "hub", stiffness=k_drive)
    b.set_end_effector("tip", ("rz",))
    return b.build()
