r"""6-PSS parallel seismic simulator with flexible struts and ball-screw drives (paper 002, Zhao).

Six chains prismatic-spherical-spherical join a rigid platform to sliders on ball screws::

                      A_i (platform point, radius 0.5 m, platform mid-plane z0)
         platform     o=============o
        (200 kg)     / \           / \      struts: 1.0 m, solid steel, 3 beam elements,
                    /   \  ...    /   \     spherical joints at both ends (S at A_i and C_i)
                   o     o       o     o
                  C_i  (slider, 15 kg, on a prismatic joint along the screw e_i;
                        drive = compliant ball screw, stiffness k_c along e_i)

* chains 1-3 ("vertical"), at angles 90, 210, 330 deg: A_i at radius 0.5 m; the screw is
  vertical at radius 1.2 m below it, so the home slider C_i is 0.7 m further out and
  sqrt(1 - 0.7^2) = 0.714 m lower (height 1.030 m); bearings at 0.2 m and 1.3 m height
  (L1 = 0.830 m below and L2 = 0.270 m above the home slider, L1 + L2 = 1.1 m);
* chains 4-6 ("horizontal"), at angles 30, 150, 270 deg: A_i at radius 0.5 m; strut and
  screw along the tangent t_i = z x e_r at height z0, home slider C_i = A_i + 1.0 m t_i;
  bearings 0.55 m either side of the home slider (L1 = L2 = 0.55 m).

The ball-screw drive is the series connection of the screw, the nut and the bearings,
``1/k_c = 1/k_s + 1/k_n + 1/k_b`` with ``k_s = A_s E_s (L1 + L2)/(L1 L2)`` (paper 002
eq. 40), taken at the home slider position (:func:`screw_stiffness`, :func:`drive_stiffness`).
With ``compliant_drives`` (default) each actuator is a spring of stiffness ``k_c`` on its
slider coordinate; without, the sliders are rigidly driven (``k_c`` is then unused).

Sources: paper 002 (platform 200 kg, inertia diag(17.333, 17.333, 33.333) kg m^2; struts
1.0 m, diameter 0.05 m, E = 206 GPa, G = 79.38 GPa, rho = 7800 kg/m^3, three elements each;
spherical joints; sliders on ball screws with E_s = 206 GPa, A_s = 1.96e-3 m^2,
L1 + L2 = 1.1 m; home height z0 = 1.744 m).  The paper's geometry tables are lost: the
geometry above is the project's reconstruction (docs/tour.rst, "The shipped robots").

*Assumed*: slider mass 15 kg, inertia of a 0.1 m steel-like cube (0.025 kg m^2 about each
axis); nut stiffness 4e8 N/m, bearing stiffness 1e9 N/m; ``k_s`` frozen at the home slider
position; gravity 9.81 m/s^2 along -z; the platform's centre of mass at its geometric centre.

End-effector coordinates ``x y z rx ry rz`` of the platform centre (Z-Y-X Tait-Bryan angles,
i.e. the paper's roll-pitch-yaw about fixed axes, R = Rz Ry Rx).  Each strut spins freely
about its own axis between its two spherical joints: six free motions, reported as
rigid-body modes by :func:`sim.solvers.modal.modes` (``slider_joint = "universal"`` locks them).  Substructures: ``platform``, ``sliders``,
``struts``.
"""
import numpy as np

from sim import ModelBuilder, Section

Z0 = 1.744                      # m, home height of the platform centre
PLATFORM_RADIUS = 0.5           # m, radius of the platform points A_i
SCREW_RADIUS_VERTICAL = 1.2     # m, radius of the vertical screws
STRUT_LENGTH = 1.0              # m
VERTICAL_ANGLES = np.radians([90.0, 210.0, 330.0])
HORIZONTAL_ANGLES = np.radians([30.0, 150.0, 270.0])
VERTICAL_BEARINGS = (0.2, 1.3)  # m, heights of the vertical screws' bearings
HORIZONTAL_HALF_SPAN = 0.55     # m, bearings either side of the home horizontal slider
PLATFORM_INERTIA = np.diag([17.333, 17.333, 33.333])   # kg m^2
SLIDER_SIZE = 0.1               # m, edge of the (assumed) cubic slider


def screw_stiffness(screw_radius, E_s, L1, L2):
    """Axial stiffness of a screw held by bearings at distances ``L1``, ``L2`` from the nut [N/m].

    ``k_s = A_s E_s (L1 + L2) / (L1 L2)`` (paper 002 eq. 40), ``A_s = pi r^2``.
    """
    return np.pi * screw_radius**2 * E_s * (L1 + L2) / (L1 * L2)


def drive_stiffness(screw_radius, E_s, L1, L2, nut_stiffness, bearing_stiffness):
    """Screw, nut and bearings in series: ``1/k_c = 1/k_s + 1/k_n + 1/k_b`` [N/m]."""
    k_s = screw_stiffness(screw_radius, E_s, L1, L2)
    return 1.0 / (1.0 / k_s + 1.0 / nut_stiffness + 1.0 / bearing_stiffness)


def chain_geometry(z0=Z0):
    """Home geometry of the six chains.

    Returns
    -------
    list of dict
        Per chain: ``A`` platform point, ``C`` slider point (world, m), ``e`` unit screw
        axis, ``L1``, ``L2`` distances from the home slider to the bearings [m].
    """
    chains = []
    for phi in VERTICAL_ANGLES:
        e_r = np.array([np.cos(phi), np.sin(phi), 0.0])
        A = PLATFORM_RADIUS * e_r + [0.0, 0.0, z0]
        dr = SCREW_RADIUS_VERTICAL - PLATFORM_RADIUS
        C = SCREW_RADIUS_VERTICAL * e_r + [0.0, 0.0, z0 - np.sqrt(STRUT_LENGTH**2 - dr**2)]
        chains.append(dict(A=A, C=C, e=np.array([0.0, 0.0, 1.0]),
                           L1=C[2] - VERTICAL_BEARINGS[0], L2=VERTICAL_BEARINGS[1] - C[2]))
    for phi in HORIZONTAL_ANGLES:
        e_r = np.array([np.cos(phi), np.sin(phi), 0.0])
        t = np.array([-np.sin(phi), np.cos(phi), 0.0])
        A = PLATFORM_RADIUS * e_r + [0.0, 0.0, z0]
        chains.append(dict(A=A, C=A + STRUT_LENGTH * t, e=t, L1=HORIZONTAL_HALF_SPAN, L2=HORIZONTAL_HALF_SPAN))
    return chains


def _axes(z, x_hint):
    """Right-handed frame (columns) with z axis ``z`` and x axis as close as possible to ``x_hint``."""
    z = z / np.linalg.norm(z)
    x = x_hint - z * (z @ x_hint)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def build(strut_radius=0.025, screw_radius=0.024977, E=206e9, G=79.38e9, rho=7800.0, E_screw=206e9,
          platform_mass=200.0, slider_mass=15.0, nut_stiffness=4e8, bearing_stiffness=1e9,
          elements_per_strut=3, compliant_drives=True, slider_joint="spherical", z0=Z0, gravity=9.81):
    """6-PSS seismic simulator at its home pose (platform centre at (0, 0, z0), level).

    Parameters
    ----------
    strut_radius : float
        Radius of the solid circular struts [m] (paper: diameter 0.05 m).
    screw_radius : float
        Lead-screw radius [m]; ``A_s = pi r^2`` (default: A_s = 1.96e-3 m^2).
    E, G, rho : float
        Strut material [Pa, Pa, kg/m^3].
    E_screw : float
        Lead-screw Young's modulus [Pa].
    platform_mass, slider_mass : float
        [kg]; the platform inertia is scaled with its mass from the paper's value.
    nut_stiffness, bearing_stiffness : float
        Axial stiffnesses in series with the screw [N/m].
    elements_per_strut : int
        Beam elements per strut.
    compliant_drives : bool
        Ball-screw drives as springs of stiffness ``k_c`` (True) or rigid driving constraints.
    slider_joint : str
        ``"spherical"`` (paper 002: S-S struts, each free to spin about its axis) or
        ``"universal"`` (first axis normal to the strut and the screw at home, second axis
        normal to the strut; locks the spin, the platform's kinematics are unchanged).
    z0 : float
        Home height of the platform centre [m].
    gravity : float
        Gravity along -z [m/s^2].
    """
    n = int(elements_per_strut)
    if n != elements_per_strut or n < 1:
        raise ValueError(f"`elements_per_strut` must be a positive integer, got {elements_per_strut!r}")
    for name, value in (("strut_radius", strut_radius), ("screw_radius", screw_radius), ("E", E), ("G", G),
                        ("rho", rho), ("E_screw", E_screw), ("platform_mass", platform_mass),
                        ("slider_mass", slider_mass), ("nut_stiffness", nut_stiffness),
                        ("bearing_stiffness", bearing_stiffness)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"`{name}` must be positive, got {value!r}")
    if slider_joint not in ("spherical", "universal"):
        raise ValueError(f"`slider_joint` must be spherical or universal, got {slider_joint!r}")
    strut = Section.circle(strut_radius, E=E, rho=rho, G=G)
    b = ModelBuilder("pss6", gravity=(0.0, 0.0, -gravity))
    centre = np.array([0.0, 0.0, z0])
    b.add_rigid_body("platform", platform_mass, centre, PLATFORM_INERTIA * platform_mass / 200.0,
                     position=centre, substructure="platform")
    b.add_marker("platform_centre", "platform", centre)
    I_slider = slider_mass * SLIDER_SIZE**2 / 6.0 * np.eye(3)
    geometry = chain_geometry(z0)
    outside = [i for i, ch in enumerate(geometry, start=1) if not (ch["L1"] > 0 and ch["L2"] > 0)]
    if outside:
        raise ValueError(f"`z0` = {z0!r} puts the slider of chain {outside[0]} outside its screw bearings "
                         f"(vertical bearings at {VERTICAL_BEARINGS[0]} and {VERTICAL_BEARINGS[1]} m)")
    for i, ch in enumerate(geometry, start=1):
        A, C, e = ch["A"], ch["C"], ch["e"]
        along = (A - C) / np.linalg.norm(A - C)
        b.add_rigid_body(f"slider_{i}", slider_mass, C, I_slider, position=C, substructure="sliders")
        nodes = np.linspace(C, A, n + 1)
        # Local z of the elements: any direction off the strut (the section is round).
        z_ref = np.array([0.0, 0.0, 1.0]) if abs(along[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
        z_ref = np.cross(along, np.cross(z_ref, along))
        b.add_beam_body(f"strut_{i}", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]), strut,
                        z_ref=z_ref, clamp=0, substructure="struts")
        screw = _axes(e, along if abs(along @ e) < 0.99 else np.cross(e, [0.0, 0.0, 1.0]) + [1e-3, 0, 0])
        b.add_marker(f"rail_{i}", None, C, screw)
        b.add_marker(f"slide_{i}", f"slider_{i}", C, screw)
        # Universal variant: axis 1 (z of the slider marker) normal to the strut, axis 2 (z of
        # the strut marker) normal to the strut and to axis 1.
        u1 = np.cross(along, e) if abs(along @ e) < 0.99 else np.cross(along, [0.0, 0.0, 1.0])
        u1 /= np.linalg.norm(u1)
        b.add_marker(f"ball_C_{i}", f"slider_{i}", C, _axes(u1, along))
        b.add_marker(f"socket_C_{i}", f"strut_{i}", C, _axes(np.cross(along, u1), along))
        b.add_marker(f"socket_A_{i}", f"strut_{i}", A)
        b.add_marker(f"ball_A_{i}", "platform", A)
        b.add_joint(f"P_{i}", "prismatic", f"rail_{i}", f"slide_{i}")
        b.add_joint(f"S_C_{i}", slider_joint, f"ball_C_{i}", f"socket_C_{i}")
        b.add_joint(f"S_A_{i}", "spherical", f"socket_A_{i}", f"ball_A_{i}")
        k_c = drive_stiffness(screw_radius, E_screw, ch["L1"], ch["L2"], nut_stiffness, bearing_stiffness)
        b.add_actuator(f"screw_{i}", f"P_{i}", stiffness=k_c if compliant_drives else None)
    b.set_end_effector("platform_centre", ("x", "y", "z", "rx", "ry", "rz"))
    b.notes = "6-PSS seismic simulator (paper 002), geometry reconstructed (docs/tour.rst, \"The shipped robots\")"
    return b.build()
