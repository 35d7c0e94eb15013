"""3-PRS tilting head (test model nobody tuned for: spatial, prismatic drives, parasitic motion).

Three vertical prismatic guides at 0.25 m from the axis (120 deg apart) carry 0.8 kg sliders,
the actuated joints.  Each slider holds, by a revolute about the guide circle's tangent, a
flexible aluminium leg (tube 10 x 1.5 mm, 0.35 m, ``elements`` beam elements, clamped at the
slider) whose upper end meets a 2 kg platform in a spherical joint at 0.08 m from its centre.
End-effector coordinates ``rx ry z`` (Z-Y-X angles and height of the platform centre); the
other three (x, y, rz) are the parasitic motion of the 3-PRS, which the constraints fix.
"""
import numpy as np

from sim import ModelBuilder, Section

R_BASE, R_PLAT, L = 0.25, 0.08, 0.35           # m
M_SLIDER, M_PLAT = 0.8, 2.0                    # kg
I_PLAT = np.diag([0.01, 0.01, 0.018])          # kg m^2, about the platform centre
E, RHO, NU = 70e9, 2700.0, 0.33
R_OUT, WALL = 0.010, 0.0015
ANGLES = np.radians([90.0, 210.0, 330.0])
HEIGHT = np.sqrt(L**2 - (R_BASE - R_PLAT) ** 2)   # platform centre above the sliders at home


def build(elements=4):
    tube = Section.tube(R_OUT, WALL, E=E, rho=RHO, nu=NU)
    b = ModelBuilder("prs3_head", gravity=(0.0, 0.0, -9.81))
    b.add_rigid_body("platform", M_PLAT, (0, 0, HEIGHT), I_PLAT, position=(0, 0, HEIGHT))
    b.add_marker("P", "platform", (0, 0, HEIGHT))
    for i, t in enumerate(ANGLES):
        radial, tangent = np.array([np.cos(t), np.sin(t), 0.0]), np.array([-np.sin(t), np.cos(t), 0.0])
        A = R_BASE * radial
        C = R_PLAT * radial + [0.0, 0.0, HEIGHT]
        b.add_rigid_body(f"slider{i}", M_SLIDER, A, 1e-3 * np.eye(3), position=A)
        b.add_marker(f"G{i}", None, A)
        b.add_marker(f"S{i}", f"slider{i}", A)
        b.add_joint(f"P{i}", "prismatic", f"G{i}", f"S{i}")
        b.add_actuator(f"s{i}", f"P{i}")
        axes = np.column_stack([radial, [0.0, 0.0, -1.0], tangent])      # z: the revolute's axis
        b.add_beam_body(f"leg{i}", np.linspace(A, C, elements + 1),
                        np.column_stack([np.arange(elements), np.arange(1, elements + 1)]), tube,
                        z_ref=tangent, clamp=0)
        b.add_marker(f"R1{i}", f"slider{i}", A, axes)
        b.add_marker(f"R2{i}", f"leg{i}", A, axes)
        b.add_joint(f"R{i}", "revolute", f"R1{i}", f"R2{i}")
        b.add_marker(f"C1{i}", f"leg{i}", C)
        b.add_marker(f"C2{i}", "platform", C)
        b.add_joint(f"S{i}", "spherical", f"C1{i}", f"C2{i}")
    b.set_end_effector("P", ("rx", "ry", "z"))
    return b.build()
