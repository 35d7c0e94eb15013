"""Planar five-bar with flexible aluminium links: the robot built in ``docs/guide.rst``.

Two motors at the base drive two proximal links; two distal links meet at the end effector
``P``.  All four links are aluminium tubes modelled as flexible beams; the robot moves in the
horizontal x-y plane, gravity along -z.  Data assumed (a generic light pick-and-place design).
"""
# [imports]
import numpy as np

import sim
# [/imports]


# [build]
def build(elements=4, outer_radius=0.012, wall=0.0015, payload=0.2, gravity=9.81):
    """The five-bar at its home posture, end effector at (0, 0.4, 0) m.

    Parameters
    ----------
    elements : int
        Beam elements per link.
    outer_radius, wall : float
        Tube section [m].
    payload : float
        Mass carried at the end effector [kg].
    gravity : float
        Gravity along -z [m/s^2].
    """
    # [/build]
    # [section]
    tube = sim.Section.tube(outer_radius, wall, sim.ALUMINIUM)
    b = sim.ModelBuilder("guide_five_bar", gravity=(0.0, 0.0, -gravity))
    # [/section]
    # [geometry]
    A = {1: np.array([-0.1, 0.0, 0.0]), 2: np.array([0.1, 0.0, 0.0])}      # motor axes
    B = {1: np.array([-0.25, 0.2, 0.0]), 2: np.array([0.25, 0.2, 0.0])}    # elbows
    P = np.array([0.0, 0.4, 0.0])                                           # end effector
    chain = np.column_stack([np.arange(elements), np.arange(1, elements + 1)])
    # [/geometry]
    for i in (1, 2):
        # [bodies]
        b.add_beam_body(f"proximal_{i}", np.linspace(A[i], B[i], elements + 1), chain, tube,
                        z_ref=(0.0, 0.0, 1.0), clamp=0)
        b.add_beam_body(f"distal_{i}", np.linspace(B[i], P, elements + 1), chain, tube,
                        z_ref=(0.0, 0.0, 1.0), clamp=0)
        # [/bodies]
        # [joints]
        b.add_marker(f"base_{i}", None, A[i])
        b.add_marker(f"A_{i}", f"proximal_{i}", A[i])
        b.add_marker(f"B_{i}", f"proximal_{i}", B[i])
        b.add_marker(f"B_{i}'", f"distal_{i}", B[i])
        b.add_marker(f"P_{i}", f"distal_{i}", P)
        b.add_joint(f"motor_{i}", "revolute", f"base_{i}", f"A_{i}")
        b.add_joint(f"elbow_{i}", "revolute", f"B_{i}", f"B_{i}'")
        b.add_actuator(f"theta_{i}", f"motor_{i}")
        # [/joints]
    # [closure]
    b.add_joint("P", "revolute", "P_1", "P_2")
    b.add_point_mass("distal_1", payload, node=elements)
    # [/closure]
    # [sensors]
    mid = elements // 2
    b.add_marker("distal_1_mid", "distal_1", np.linspace(B[1], P, elements + 1)[mid])
    chord = (P - B[1]) / np.linalg.norm(P - B[1])
    b.add_marker("distal_1_start", "distal_1", B[1],
                 np.column_stack([chord, [-chord[1], chord[0], 0.0], [0.0, 0.0, 1.0]]))
    b.add_sensor("distal_1_deflection", "deflection", ("distal_1_start", "distal_1_mid", "P_1"), axis=1,
                 units="m", description="distal link 1: mid-node distance from its chord, in the plane")
    # [/sensors]
    # [end_effector]
    b.set_end_effector("P_1", ("x", "y", "z"))
    return b.build()
    # [/end_effector]
