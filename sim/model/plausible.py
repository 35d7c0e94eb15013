"""Engineering ranges of a robot's inputs, and the unit slip a value outside them suggests.

A value typed in the unit of a data sheet rather than in SI (E = 210 for 210 GPa, rho = 7.8
for 7.8 g/cm^3, a radius of 15 for 15 mm, omega = 120 for 120 rpm) gives a robot that runs and
answers nonsense: 0.0003 Hz, arms of 1.2e5 kg, 73 g at the end effector.  The ranges below are
those of the materials, sections and motions of robots and machines, wide enough for the usual
modelling devices (a link made 1000 times stiffer than steel to stand for a rigid one); a
value outside them is refused with the SI value it would have in the unit it was likely typed
in.
"""
import numpy as np

G_0 = 9.80665       # m/s^2, standard gravity (for accelerations quoted in g)

#: Range of each material quantity, SI: (low, high, unit).  Below ``low`` nothing a beam is made
#: of (rubber is ~1e6 Pa, balsa ~100 kg/m^3); above ``high`` not even a rigid-link device.
RANGES = {
    "E": (1e6, 1e16, "Pa"),
    "G": (3e5, 1e16, "Pa"),
    "rho": (100.0, 1e6, "kg/m^3"),
}
#: Where the common engineering materials lie (polymers to diamond, balsa to tungsten): a value
#: that lands here once converted from a data-sheet unit was likely typed in that unit.
TYPICAL = {"Pa": (1e8, 1.2e12), "kg/m^3": (100.0, 23e3)}
#: Data-sheet units of each SI unit, with their factor to it.
SLIPS = {"Pa": (("GPa", 1e9), ("MPa", 1e6)), "kg/m^3": (("g/cm^3", 1e3),),
         "m": (("mm", 1e-3),), "rad/s": (("rpm", 2 * np.pi / 60),)}

#: Mass per length of a beam body above which it is heavy for a robot or machine link [kg/m]:
#: a solid steel bar 0.4 m across.
LINEAR_DENSITY = 1e3

#: End-effector motion beyond these is refused unless the scenario raises the bound
#: (``trajectory.max_acceleration``, ``trajectory.max_speed``): the fastest pick-and-place
#: robots reach about 15 g and 10 m/s.
MAX_ACCELERATION = 50 * G_0     # m/s^2
MAX_SPEED = 20.0                # m/s


def likely(value, unit):
    """``" (if it is in GPa: E = 2.1e+11 Pa)"``-like hint for ``value`` in SI ``unit``, or ``""``
    when no data-sheet unit brings it into the typical range."""
    low, high = TYPICAL.get(unit, (-np.inf, np.inf))
    for name, factor in SLIPS.get(unit, ()):
        if low <= value * factor <= high:
            return f": {name} typed as {unit}? {value:g} {name} = {value * factor:.4g} {unit}"
    return ""


def material_problems(values):
    """One-line problems of material values ``{"E": .., "G": .., "rho": ..}`` (SI) outside
    :data:`RANGES`, each naming the value, its range and the likely unit.  ``E`` and ``G`` are not
    checked against each other: a beam of wood or fibre composite (a carbon tube: E = 130 GPa
    along the fibres, G = 5 GPa) is no isotropic solid."""
    out = []
    for name, value in values.items():
        low, high, unit = RANGES[name]
        if name == "G" and out and out[0].startswith("section `E`"):
            continue        # G is mostly E / 2(1 + nu): the same slip, said once
        if np.isfinite(value) and value > 0 and not low <= value <= high:
            out.append(f"section `{name}` = {value:.3g} {unit} is not plausible "
                       f"(expected {low:g} .. {high:g} {unit}){likely(value, unit)}")
    return out


def section_problems(depth, span):
    """A problem when a beam body's section ``depth`` [m] (``sqrt(12 I / A)``, the depth of a
    rectangle) is larger than the body's ``span`` [m]: not a beam, usually a size in mm."""
    if depth > span:
        return [f"section {depth:.3g} m deep (sqrt(12 I/A)) on a body {span:.3g} m long: not a beam"
                f"{' (section sizes in mm typed as m?)' if depth * 1e-3 <= span else ''}"]
    return []


def heavy(name, mass, span):
    """A warning when a beam body of ``mass`` [kg] over ``span`` [m] is heavier per length
    than :data:`LINEAR_DENSITY`: its sizes or density are likely in the wrong unit."""
    if span > 0 and mass / span > LINEAR_DENSITY:
        return [f"body `{name}` weighs {mass:.3g} kg ({mass / span:.3g} kg/m over {span:.3g} m), more than a solid "
                f"steel bar 0.4 m across: check its section sizes (mm typed as m?) and rho"]
    return []
