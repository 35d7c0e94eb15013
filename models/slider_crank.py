r"""Flexible slider-crank (Simeon's benchmark): rigid crank, flexible connecting rod, slider.

    y
    |        B (crank pin)
    |       o.
    |  l1  /   ` .   l2 (flexible rod, 8 x 8 mm steel)
    |     /         ` .
    O===o---------------` o C ==[slider]==  -> x   (prismatic along x)
      crank (driven, 150 rad/s)

Home (t = 0): crank angle 0, so O = (0, 0, 0), B = (0.15, 0, 0), C = (0.45, 0, 0); the
motion is in the x-y plane.

Sources (B. Simeon, *Computational Flexible Multibody Dynamics*, Springer 2013, §5.2, and
Simeon, "Numerical analysis of flexible multibody systems", Multibody Syst. Dyn. 6 (2001)
305-325): crank l1 = 0.15 m, m1 = 0.36 kg, J1 = 0.002727 kg m^2 about the axis through O;
rod l2 = 0.30 m, square section 8 x 8 mm, E = 2e11 Pa, rho = 7870 kg/m^3 (m2 = 0.151104 kg);
slider m3 = 0.075552 kg; crank speed 150 rad/s; no gravity.  Simeon's reference: mid-span
deflection of the rod 0.1893 mm at t = 0.1 s (two-mode rod).

Modelling choices (3D model of a planar mechanism without redundant constraints): revolute
O (ground-crank, actuated), spherical B (crank-rod), universal C (rod-slider: first axis
world z on the slider, second axis the rod's in-plane normal, which blocks the rod's spin),
prismatic slider along x.  The rod is an FFR beam clamped at B (node 0) with ``elements``
elements; its out-of-plane bending and torsion stay unloaded.  *Assumed*: nu = 0.3 for the
shear modulus (torsion is not excited), the crank's inertia about its own axis and
transverse axes (it is driven, so they only enter the drive torque).

End-effector coordinate ``x`` of the slider.  Sensor ``rod_midspan_deflection``: the rod's
mid-node transverse distance from the chord B-C, positive along the rod's in-plane normal
(+y at home) [m]; needs an even number of elements.
"""
import numpy as np

from sim import ModelBuilder, Section

CRANK_LENGTH = 0.15
ROD_LENGTH = 0.30
CRANK_MASS = 0.36
CRANK_INERTIA = 0.002727     # about the axis through O [kg m^2]
SLIDER_MASS = 0.075552


def build(elements=8, E=2e11, rho=7870.0, nu=0.3, width=0.008, height=0.008, stiffening=False, modes=0,
          frame="tangent", planar=False):
    """Slider-crank at crank angle 0.

    Parameters
    ----------
    elements : int
        Beam elements along the rod (even, for the mid-span sensor).
    E, rho, nu : float
        Rod material [Pa, kg/m^3, -].
    width, height : float
        Rod section (in-plane y, out-of-plane z) [m].
    stiffening : bool
        Geometric stiffening of the rod by its axial force (second-order axial strain).
    modes : int
        0 (default): all nodal coordinates of the rod, clamped at B.  ``r > 0``: Simeon's
        kind of rod -- a chord (pinned-pinned) frame and its ``r`` lowest simply-supported
        modes (sine shapes; with the square section they come in in-plane/out-of-plane pairs,
        so ``modes = 4`` holds his two in-plane modes, the rod then being rigid axially).
    frame : {"tangent", "chord"}
        Floating frame of the rod with all its nodal coordinates (``modes = 0``): clamped at
        B (``"tangent"``, default) or the chord frame B-C, pinned-pinned (``"chord"``, Simeon's
        choice).  A linear FFR body is accurate when its frame leaves the elastic coordinates
        small: in the tangent frame they also carry the rod's rotation relative to the chord
        (up to 0.02 rad here), and a rotation ``theta`` carried by linear coordinates lengthens
        the rod by ``L theta^2 / 2`` (50 um), which the closed loop turns into axial strain.
        The two frames differ by 13 % at the 5 ms peak and by 7 % at t = 0.1 s; the chord frame
        converges to Simeon's value.  ``modes > 0`` always uses the chord frame.
    planar : bool
        Keep only the rod's in-plane elastic coordinates (axial and in-plane bending, 3 per
        node instead of 6): the mechanism, its loads and its initial state are planar, so the
        response is the same (to 1e-9 relative), from half the elastic coordinates.
    """
    n = int(elements)
    if n != elements or n < 2 or n % 2:
        raise ValueError(f"`elements` must be an even integer >= 2, got {elements!r}")
    for name, value in (("E", E), ("rho", rho), ("width", width), ("height", height)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"`{name}` must be positive, got {value!r}")
    if frame not in ("tangent", "chord"):
        raise ValueError(f"`frame` must be 'tangent' or 'chord', got {frame!r}")
    b = ModelBuilder("slider_crank", gravity=(0.0, 0.0, 0.0))
    O, B, C = np.zeros(3), np.array([CRANK_LENGTH, 0, 0]), np.array([CRANK_LENGTH + ROD_LENGTH, 0, 0])
    # Crank: mass centre at mid-length; J1 is about O, so about the centre J1 - m (l1/2)^2.
    Jc = CRANK_INERTIA - CRANK_MASS * (CRANK_LENGTH / 2) ** 2
    b.add_rigid_body("crank", CRANK_MASS, 0.5 * B, np.diag([1e-3 * Jc, Jc, Jc]), position=O)
    nodes = np.linspace(B, C, n + 1)
    b.add_beam_body("rod", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]),
                    Section.rectangle(width, height, E=E, rho=rho, nu=nu), z_ref=(0, 0, 1), clamp=0,
                    stiffening=stiffening, pinned=n if modes or frame == "chord" else None,
                    modes=int(modes) or None, plane=(0.0, 0.0, 1.0) if planar else None)
    b.add_rigid_body("slider", SLIDER_MASS, C, 1e-6 * np.eye(3), position=C)
    z_axis = np.eye(3)                                     # marker axes = world axes (z normal to plane)
    x_along = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]], dtype=float)   # z along +x
    y_normal = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]], dtype=float)  # z along +y
    b.add_marker("O_ground", None, O, z_axis)
    b.add_marker("O_crank", "crank", O, z_axis)
    b.add_marker("B_crank", "crank", B, z_axis)
    b.add_marker("B_rod", "rod", B, z_axis)
    b.add_marker("rod_mid", "rod", nodes[n // 2], z_axis)
    b.add_marker("C_rod", "rod", C, y_normal)
    b.add_marker("C_slider", "slider", C, z_axis)
    b.add_marker("guide_ground", None, O, x_along)
    b.add_marker("guide_slider", "slider", C, x_along)
    b.add_joint("O", "revolute", "O_ground", "O_crank")
    b.add_joint("B", "spherical", "B_crank", "B_rod")
    b.add_joint("C", "universal", "C_slider", "C_rod")
    b.add_joint("guide", "prismatic", "guide_ground", "guide_slider")
    b.add_actuator("crank_angle", "O")
    b.add_sensor("rod_midspan_deflection", "deflection", ("B_rod", "rod_mid", "C_rod"), axis=1, units="m",
                 description="rod mid-node transverse distance from the chord B-C (in-plane normal)")
    b.set_end_effector("C_slider", ("x",), ("x",))
    b.notes = "Simeon's flexible slider-crank benchmark"
    if (E, rho, width, height) == (2e11, 7870.0, 0.008, 0.008):
        b.add_reference("sensors.rod_midspan_deflection", [0.1893e-3], units="m", at=(0.1,),
                        source="Simeon (2001)", condition="150 rad/s from his initial state")
    return b.build()
