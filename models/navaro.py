r"""NaVARo: planar 3-dof parallel robot with three parallelogram legs (paper 000, Germain et al.).

Leg i (i = 1, 2, 3), in the plane z = 0, base centre O at the centroid of A1 A2 A3:

              B_i -------- C_i
               /            \  link 4i passes through D_i at its middle
     link 2i  /     link 3i  \
             /                \
          A_i ----- link 1i --- D_i
                                \
                                 E_i ----- P  (platform: segments E_i P rigidly joined at P)

A_i at radius 0.4041 m in direction gamma_i (pi/2, -5pi/6, -pi/6).  Lengths: A_iB_i = B_iC_i =
A_iD_i = 0.21 m, C_iE_i = 0.42 m with C_iD_i = D_iE_i = 0.21 m, E_iP = 0.2027 m; E_i at angle
gamma_i + theta + pi/3 around P.  Revolute joints (axes along z) at B, C, D (link 1i to the
middle of link 4i) and E; at A_i the angles q1i (link 1i to ground) and q2i (link 2i to link
1i) are the clutch-locked actuators of the experiment.  Assembly mode: the home pose
``x = y = theta = 0`` with A1 = (0, 0.4041), B1 ~ (-0.0128, 0.6137), C1 ~ (-0.2011, 0.5206),
D1 ~ (-0.1883, 0.3110), E1 ~ (-0.1755, 0.1014); legs 2, 3 by rotation.

Material (paper 000 §5.1): duraluminium E = 74 GPa, rho = 2800 kg/m^3, and G = E / (2 (1 + nu))
with nu = 0.33, 27.82 GPa (``SHEAR_MODULUS``).  Sections (paper 000 Table 2), local x along the
link and local z normal to the plane:

    links 1i-4i: A = 2.4e-4 m^2, I_y = 1.152e-8, I_z = 2.000e-9, I_p = 1.352e-8, I_0 = 5.902e-9 m^4
    links 5i:    A = 4.0e-4 m^2, I_y = 3.333e-9, I_z = 5.333e-8, I_p = I_y + I_z, I_0 = 1.123e-8 m^4

Two of these inputs are corrected from what the paper prints (SPEC §4.1); ``build(G=PRINTED_G,
platform_Iy=PRINTED_PLATFORM_IY)`` runs the printed ones:

* Platform I_y: Table 2 prints 3.333e-8 m^4 (and I_p = 8.666e-8), a tenfold misprint.  The
  table's own A = 4e-4 m^2, I_z = 5.333e-8 m^4 and I_0 = 1.123e-8 m^4 are those of a
  rectangle 40 mm wide in the plane and 10 mm thick (I_z = 10 * 40**3 / 12 mm^4), whose
  out-of-plane I_y is 40 * 10**3 / 12 mm^4 = 3.333e-9 m^4 (the legs' values are all those of
  a 10 x 24 mm rectangle).  I_p follows as I_y + I_z.
* G: §5.1 prints 28.9 GPa (nu = 0.28).  Table 3's frequencies (Matlab and Cast3M, which takes E
  and nu as inputs) imply nu = 0.33, the usual value for aluminium: with the printed G the
  out-of-plane mode f4 is 0.9 % high at pose 1 even with the corrected I_y.

Discretisation (paper 000 §5.1): one element per link, two for link 4i; every body is a
floating-frame beam structure, the platform one body of three elements.  This gives the
paper's 90 independent coordinates with the actuators locked.  Published check (Cast3M,
paper 000 Table 3, pose 1): 44.10, 44.10, 53.98, 60.63 (out of plane), 95.62 Hz, this model's
modes 1 to 5 (declared with ``add_reference``, drawn by ``sim plot``); this model gives
44.10, 44.10, 53.98, 60.63, 95.61 Hz.  With the printed inputs the in-plane modes are the same
and f4 is 73.24 Hz (+21 %).  The project's copy of Table 3 gives pose 1 only; at all eight poses
of ``POSES`` the frequencies are those of a plain linear 3D frame of this discretisation
(``tests/navaro_frame.py``) to round-off.

*Assumed*: gravity along -z (normal to the plane; it does not enter the linear modes).
``joint_mass`` and ``clutch_stiffness`` (paper 000 §5.3, the refined model: about 0.3 kg per
joint and 2000 N m/rad per clutch) are 0 by default (rigid clutches, no joint masses), as in
the Cast3M model.  End-effector coordinates ``x y theta`` of the platform frame at P.
"""
import numpy as np

from sim import ModelBuilder, Section

BASE_RADIUS = 0.4041
PLATFORM_RADIUS = 0.2027
LINK = 0.21
GAMMA = (np.pi / 2, -5 * np.pi / 6, -np.pi / 6)
SECTION_LEG = dict(A=2.4e-4, Iy=1.152e-8, Iz=2.000e-9, Ip=1.352e-8, J=5.902e-9)
#: Platform links 5i without I_y (``build``'s ``platform_Iy``); I_p = I_y + I_z.
SECTION_PLATFORM = dict(A=4e-4, Iz=5.333e-8, J=1.123e-8)
#: Shear modulus [Pa] from nu = 0.33, and the inputs as printed in paper 000 (module docstring).
SHEAR_MODULUS = 74e9 / (2 * (1 + 0.33))
PRINTED_G = 28.9e9
PRINTED_PLATFORM_IY = 3.333e-8
#: Postures of paper 000 Fig. 4 (x [m], y [m], theta [rad]).
POSES = {
    1: (0.0, 0.0, 0.0), 2: (0.0, 0.0, -np.pi / 3), 3: (0.117, 0.068, -np.pi / 3), 4: (0.182, 0.105, -np.pi / 3),
    5: (-0.117, 0.068, -np.pi / 3), 6: (-0.182, 0.105, -np.pi / 3), 7: (0.0, -0.135, -np.pi / 3),
    8: (0.0, -0.21, -np.pi / 3),
}


def _rot(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def leg_points(i, x=0.0, y=0.0, theta=0.0):
    """Points A, B, C, D, E (each (3,)) of leg ``i`` (0-based) at a platform pose, home branch."""
    g = GAMMA[i]
    A = BASE_RADIUS * np.array([np.cos(g), np.sin(g), 0.0])
    E = np.array([x, y, 0.0]) + PLATFORM_RADIUS * np.array([np.cos(g + theta + np.pi / 3), np.sin(g + theta + np.pi / 3), 0.0])
    # D is at LINK from both A and E; the home branch puts D to the right of A -> E.
    d = np.linalg.norm(E - A)
    if not 0.0 < d < 2 * LINK:
        raise ValueError(f"leg {i + 1} cannot reach E = {E[:2].round(4).tolist()}")
    mid = 0.5 * (A + E)
    h = np.sqrt(LINK**2 - (0.5 * d) ** 2)
    normal = np.array([(E - A)[1], -(E - A)[0], 0.0]) / d
    D = mid + h * normal
    C = 2 * D - E
    B = A + C - D
    return A, B, C, D, E


def build(E=74e9, G=SHEAR_MODULUS, rho=2800.0, platform_Iy=3.333e-9, elements_per_link=1, joint_mass=0.0, clutch_stiffness=0.0, gravity=9.81):
    """NaVARo model at the home pose.

    Parameters
    ----------
    E, G, rho : float
        Young's and shear moduli [Pa], density [kg/m^3]; the paper prints G = 28.9e9
        (``PRINTED_G``), its frequencies imply 27.82e9 (``SHEAR_MODULUS``, nu = 0.33).
    platform_Iy : float
        Out-of-plane second moment of the platform links 5i [m^4]; the paper's Table 2 prints
        3.333e-8 (``PRINTED_PLATFORM_IY``), a misprint of the 40 x 10 mm section's 3.333e-9.
    elements_per_link : int
        Beam elements per 0.21 m link (link 4i gets twice as many; the paper uses 1).
    joint_mass : float
        Mass lumped at each passive joint node B, C, D, E of every leg [kg].
    clutch_stiffness : float
        Torsional stiffness of the locked clutches at A [N m/rad]; 0 (default) locks them
        rigidly, as in the Cast3M model.
    gravity : float
        Gravity along -z [m/s^2].
    """
    n = int(elements_per_link)
    if n != elements_per_link or n < 1:
        raise ValueError(f"`elements_per_link` must be a positive integer, got {elements_per_link!r}")
    if not joint_mass >= 0:
        raise ValueError(f"`joint_mass` must be >= 0, got {joint_mass!r}")
    if not clutch_stiffness >= 0:
        raise ValueError(f"`clutch_stiffness` must be >= 0, got {clutch_stiffness!r}")
    clutch = clutch_stiffness if clutch_stiffness > 0 else None
    leg = Section(E=E, G=G, rho=rho, **SECTION_LEG)
    plate = Section(E=E, G=G, rho=rho, Iy=platform_Iy, **SECTION_PLATFORM)
    b = ModelBuilder("navaro", gravity=(0.0, 0.0, -gravity))

    def chain(p, q, k):
        return np.linspace(p, q, k + 1)

    def elements(k):
        return np.column_stack([np.arange(k), np.arange(1, k + 1)])

    for i in range(3):
        A, B, C, D, Ei = leg_points(i)
        s = f"{i + 1}"
        b.add_beam_body(f"link1_{s}", chain(A, D, n), elements(n), leg, substructure="links 1")
        b.add_beam_body(f"link2_{s}", chain(A, B, n), elements(n), leg, substructure="links 2")
        b.add_beam_body(f"link3_{s}", chain(B, C, n), elements(n), leg, substructure="links 3")
        b.add_beam_body(f"link4_{s}", chain(C, Ei, 2 * n), elements(2 * n), leg, substructure="links 4")
        for body, name, point in ((None, "A0", A), (f"link1_{s}", "A1", A), (f"link2_{s}", "A2", A),
                                  (f"link2_{s}", "B2", B), (f"link3_{s}", "B3", B), (f"link3_{s}", "C3", C),
                                  (f"link4_{s}", "C4", C), (f"link1_{s}", "D1", D), (f"link4_{s}", "D4", D),
                                  (f"link4_{s}", "E4", Ei)):
            b.add_marker(f"{name}_{s}", body, point)
        b.add_joint(f"A1_{s}", "revolute", f"A0_{s}", f"A1_{s}")
        b.add_joint(f"A2_{s}", "revolute", f"A1_{s}", f"A2_{s}")
        b.add_joint(f"B_{s}", "revolute", f"B2_{s}", f"B3_{s}")
        b.add_joint(f"C_{s}", "revolute", f"C3_{s}", f"C4_{s}")
        b.add_joint(f"D_{s}", "revolute", f"D1_{s}", f"D4_{s}")
        b.add_actuator(f"q1_{s}", f"A1_{s}", stiffness=clutch)
        b.add_actuator(f"q2_{s}", f"A2_{s}", stiffness=clutch)
        if joint_mass > 0:
            for body, point in ((f"link3_{s}", B), (f"link4_{s}", C), (f"link4_{s}", D), (f"link4_{s}", Ei)):
                b.add_point_mass(body, joint_mass, position=point)
    Es = [leg_points(i)[4] for i in range(3)]
    b.add_beam_body("platform", np.vstack([np.zeros(3)] + Es), np.array([[0, 1], [0, 2], [0, 3]]), plate,
                    substructure="platform")
    b.add_marker("P", "platform", np.zeros(3))
    for i, Ei in enumerate(Es):
        s = f"{i + 1}"
        b.add_marker(f"E5_{s}", "platform", Ei)
        b.add_joint(f"E_{s}", "revolute", f"E4_{s}", f"E5_{s}")
    b.set_end_effector("P", ("x", "y", "rz"), ("x", "y", "theta"))
    b.notes = "paper 000 (Germain et al.), Table 2 sections; Table 3 reference frequencies"
    # Cast3M's five lowest modes are this model's five lowest; it ran the paper's discretisation
    # and inputs, so they are references of the default model only.
    defaults = (E, G, rho, platform_Iy, elements_per_link, joint_mass, clutch_stiffness)
    if defaults == (74e9, SHEAR_MODULUS, 2800.0, 3.333e-9, 1, 0.0, 0.0):
        b.add_reference("modes.frequencies", [44.10, 44.10, 53.98, 60.63, 95.62], units="Hz", at=POSES[1],
                        source="Cast3M (paper 000, Table 3, pose 1)")
    return b.build()
