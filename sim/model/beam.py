r"""3D Euler–Bernoulli beam element (12 dof), vectorised over elements.

Local frame: x along the element from node 1 to node 2, y and z the principal axes of the
section.  Nodal dof order ``(u, v, w, theta_x, theta_y, theta_z)`` at node 1 then node 2.
Interpolation, with ``xi = x / L``:

* axial ``u`` and torsion ``theta_x``: linear;
* bending ``v(xi) = H1 v1 + L H2 theta_z1 + H3 v2 + L H4 theta_z2`` with ``theta_z = dv/dx``,
  ``w(xi) = H1 w1 - L H2 theta_y1 + H3 w2 - L H4 theta_y2`` with ``theta_y = -dw/dx``
  (cubic Hermite: ``H1 = 1 - 3xi^2 + 2xi^3``, ``H2 = xi - 2xi^2 + xi^3``, ``H3 = 3xi^2 - 2xi^3``,
  ``H4 = xi^3 - xi^2``).

The section rotation field ``theta(xi)`` is interpolated by the same functions, so that the
rotary inertia of the sections (``rho I_p`` about x, ``rho I_y``, ``rho I_z``) enters the
consistent mass.  Every integrand is a polynomial of degree <= 6 in ``xi``: four Gauss points
integrate it exactly.

References
----------
J. S. Przemieniecki, *Theory of Matrix Structural Analysis*, McGraw-Hill, 1968, ch. 5 and 11.
A. A. Shabana, *Dynamics of Multibody Systems*, 4th ed., Cambridge, 2013, ch. 5–6.
"""
from dataclasses import dataclass

import numpy as np

from sim.model import plausible


def _gauss01(n):
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (x + 1.0), 0.5 * w


GAUSS_XI, GAUSS_W = _gauss01(4)


@dataclass(frozen=True)
class Material:
    """An isotropic linear-elastic material (SI units).

    Parameters
    ----------
    name : str
    E : float
        Young's modulus [Pa].
    rho : float
        Density [kg/m^3].
    nu : float
        Poisson's ratio [1]; the shear modulus is ``G = E / (2 (1 + nu))``.
    source : str
        Where the values come from.
    """

    name: str
    E: float
    rho: float
    nu: float
    source: str = ""

    def __post_init__(self):
        check_poisson(self.nu, f"material {self.name}: ")

    @property
    def G(self):
        """Shear modulus [Pa]."""
        return self.E / (2.0 * (1.0 + self.nu))


def check_poisson(nu, where=""):
    """ValueError naming ``nu`` unless it is a Poisson's ratio of an isotropic material, in
    (-1, 0.5] (at -1 the shear modulus ``E / (2 (1 + nu))`` is infinite)."""
    if not -1.0 < nu <= 0.5:
        raise ValueError(f"{where}Poisson's ratio `nu` must be in (-1, 0.5], got {nu!r}")


#: Structural steel, design values of EN 1993-1-1:2005 (Eurocode 3) §3.2.6 (E = 210 GPa,
#: nu = 0.3) and the density of EN 1991-1-1 Table A.4 (77 kN/m^3 / g ~ 7850 kg/m^3).
STEEL = Material("steel", E=210e9, rho=7850.0, nu=0.3,
                 source="EN 1993-1-1 §3.2.6 (E, nu); EN 1991-1-1 Table A.4 (density)")
#: Structural aluminium alloys, design values of EN 1999-1-1:2007 (Eurocode 9) §3.2.5: E = 70
#: GPa, nu = 0.3, density 2700 kg/m^3.
ALUMINIUM = Material("aluminium", E=70e9, rho=2700.0, nu=0.3, source="EN 1999-1-1 §3.2.5")


def _elastic(material, E, rho, G, nu):
    """``(E, rho, G)`` of a section: from ``material`` (a :class:`Material`), or from ``E``,
    ``rho`` and ``G`` or Poisson's ratio ``nu`` (``G = E / (2 (1 + nu))``)."""
    if material is not None:
        if not isinstance(material, Material):
            raise ValueError(f"section: material must be a Material (sim.STEEL, sim.ALUMINIUM, sim.Material(...)), "
                             f"got {material!r}")
        if any(x is not None for x in (E, rho, G, nu)):
            raise ValueError(f"section: give either material={material.name} or E, rho and G or nu, not both")
        return material.E, material.rho, material.G
    if E is None or rho is None:
        raise ValueError("section: give a material (sim.STEEL, sim.ALUMINIUM, sim.Material(...)) or E and rho")
    if G is not None:
        return E, rho, G
    if nu is None:
        raise ValueError("section: give the shear modulus G or Poisson's ratio nu")
    check_poisson(nu, "section: ")
    return E, rho, E / (2.0 * (1.0 + nu))


@dataclass(frozen=True)
class Section:
    """Material and cross-section of a beam (SI units).

    Parameters
    ----------
    E, G : float
        Young's and shear moduli [Pa].
    rho : float
        Density [kg/m^3].
    A : float
        Area [m^2].
    Iy, Iz : float
        Second moments of area about the local y and z axes [m^4]; ``Iz`` governs bending in
        the local x–y plane.
    J : float
        Torsion constant [m^4].
    Ip : float, optional
        Polar second moment for the torsional rotary inertia [m^4]; ``Iy + Iz`` when omitted
        (its definition for any section).
    c_y, c_z : float, optional
        Distances [m] of the extreme fibres from the centroid along local y and z, for the
        stresses (:attr:`fibres`); set by :meth:`rectangle`, :meth:`circle` and :meth:`tube`.
    W_t : float, optional
        Torsion section modulus [m^3]: the largest torsion shear stress is ``T / W_t``.
    round : bool
        The section is a circle or an annulus: its extreme fibre in bending is on the radius
        along the resultant moment (``sqrt(My^2 + Mz^2) c / I``), not at a corner.
    """

    E: float
    G: float
    rho: float
    A: float
    Iy: float
    Iz: float
    J: float
    Ip: float | None = None
    c_y: float | None = None
    c_z: float | None = None
    W_t: float | None = None
    round: bool = False

    @property
    def polar(self):
        return self.Iy + self.Iz if self.Ip is None else self.Ip

    def problems(self):
        """List of one-line descriptions of non-physical values (empty when valid)."""
        out = []
        for name in ("E", "G", "rho", "A", "Iy", "Iz", "J"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                out.append(f"section `{name}` must be positive and finite, got {value!r}")
        if self.Ip is not None and not (np.isfinite(self.Ip) and self.Ip > 0):
            out.append(f"section `Ip` must be positive and finite, got {self.Ip!r}")
        return out + plausible.material_problems({"E": self.E, "G": self.G, "rho": self.rho})

    @property
    def fibres(self):
        """``(c_y, c_z, W_t)``: extreme-fibre distances [m] and torsion section modulus [m^3].

        A generic section (given by its constants, no shape) is assumed as deep as the rectangle
        of the same area and second moment, ``c = sqrt(3 I / A)`` along each axis, and its
        largest torsion stress that of a circle's rim at the farther fibre, ``T max(c_y, c_z) / J``.
        """
        c_y = np.sqrt(3 * self.Iz / self.A) if self.c_y is None else self.c_y
        c_z = np.sqrt(3 * self.Iy / self.A) if self.c_z is None else self.c_z
        return float(c_y), float(c_z), float(self.J / max(c_y, c_z) if self.W_t is None else self.W_t)

    @property
    def depth(self):
        """``sqrt(12 I / A)`` [m] with the larger of ``Iy``, ``Iz``: a rectangle's depth, 1.7 times a
        solid circle's radius."""
        return float(np.sqrt(12 * max(self.Iy, self.Iz) / self.A))

    @classmethod
    def rectangle(cls, width, height, material=None, *, E=None, rho=None, G=None, nu=None):
        """Solid rectangle ``width`` (local y) x ``height`` (local z) [m] of a ``material``
        (:class:`Material`: ``sim.STEEL``, ``sim.ALUMINIUM``), or of modulus ``E``, density
        ``rho`` and shear modulus ``G`` (or Poisson's ratio ``nu``: ``G = E / (2 (1 + nu))``).

        Torsion constant from Roark's series ``J = a b^3 (1/3 - 0.21 (b/a)(1 - (b/a)^4/12))``,
        ``a >= b``; largest torsion stress ``T b / J`` (mid long side; exact for a thin
        rectangle, 7 % high for a square).

        Examples
        --------
        >>> Section.rectangle(0.03, 0.01, sim.STEEL)                 # doctest: +SKIP
        """
        E, rho, G = _elastic(material, E, rho, G, nu)
        a, b = max(width, height), min(width, height)
        J = a * b**3 * (1.0 / 3.0 - 0.21 * (b / a) * (1.0 - (b / a) ** 4 / 12.0))
        return cls(E=E, G=G, rho=rho, A=width * height, Iy=width * height**3 / 12.0,
                   Iz=height * width**3 / 12.0, J=J, c_y=width / 2.0, c_z=height / 2.0, W_t=J / b)

    @classmethod
    def circle(cls, radius, material=None, *, E=None, rho=None, G=None, nu=None):
        """Solid circular section of ``radius`` [m]; material as in :meth:`rectangle`."""
        E, rho, G = _elastic(material, E, rho, G, nu)
        I = np.pi * radius**4 / 4.0
        return cls(E=E, G=G, rho=rho, A=np.pi * radius**2, Iy=I, Iz=I, J=2 * I, c_y=radius, c_z=radius,
                   W_t=2 * I / radius, round=True)

    @classmethod
    def tube(cls, outer_radius, wall, material=None, *, E=None, rho=None, G=None, nu=None):
        """Thin- or thick-walled circular tube of ``outer_radius`` and ``wall`` thickness [m]
        (a 20 x 2 mm tube: ``Section.tube(0.010, 0.002, sim.ALUMINIUM)``); material as in
        :meth:`rectangle`.  Exact annulus properties: ``A = pi (R^2 - r^2)``, ``I = pi (R^4 -
        r^4) / 4``, ``J = 2 I`` (a closed circular tube).
        """
        E, rho, G = _elastic(material, E, rho, G, nu)
        if not (0 < wall <= outer_radius):
            raise ValueError(f"tube wall must be in (0, outer_radius = {outer_radius!r}], got {wall!r}")
        r = outer_radius - wall
        I = np.pi * (outer_radius**4 - r**4) / 4.0
        return cls(E=E, G=G, rho=rho, A=np.pi * (outer_radius**2 - r**2), Iy=I, Iz=I, J=2 * I, c_y=outer_radius,
                   c_z=outer_radius, W_t=2 * I / outer_radius, round=True)


def hermite(xi):
    """Cubic Hermite functions and their xi-derivatives.  (n,) -> H (4, n), dH (4, n)."""
    H = np.array([1 - 3 * xi**2 + 2 * xi**3, xi - 2 * xi**2 + xi**3, 3 * xi**2 - 2 * xi**3, xi**3 - xi**2])
    dH = np.array([-6 * xi + 6 * xi**2, 1 - 4 * xi + 3 * xi**2, 6 * xi - 6 * xi**2, 3 * xi**2 - 2 * xi])
    return H, dH


def shape_functions(L, xi=GAUSS_XI):
    """Translation and rotation interpolation in the element frame.

    Parameters
    ----------
    L : ndarray, shape (n_el,)
        Element lengths [m].
    xi : ndarray, shape (n_xi,)
        Stations along the element, ``x / L``.

    Returns
    -------
    Nt, Nr : ndarray, shape (n_el, n_xi, 3, 12)
        ``u(xi) = Nt @ q_e`` and ``theta(xi) = Nr @ q_e`` in local components.
    """
    L = np.asarray(L, dtype=float)[:, None]
    xi = np.asarray(xi, dtype=float)
    H, dH = hermite(xi)
    n_el, n_xi = L.shape[0], xi.size
    Nt = np.zeros((n_el, n_xi, 3, 12))
    Nr = np.zeros((n_el, n_xi, 3, 12))
    Nt[:, :, 0, 0], Nt[:, :, 0, 6] = 1 - xi, xi
    Nr[:, :, 0, 3], Nr[:, :, 0, 9] = 1 - xi, xi
    # v and theta_z = dv/dx
    Nt[:, :, 1, 1], Nt[:, :, 1, 5], Nt[:, :, 1, 7], Nt[:, :, 1, 11] = H[0], L * H[1], H[2], L * H[3]
    Nr[:, :, 2, 1], Nr[:, :, 2, 5], Nr[:, :, 2, 7], Nr[:, :, 2, 11] = dH[0] / L, dH[1], dH[2] / L, dH[3]
    # w and theta_y = -dw/dx
    Nt[:, :, 2, 2], Nt[:, :, 2, 4], Nt[:, :, 2, 8], Nt[:, :, 2, 10] = H[0], -L * H[1], H[2], -L * H[3]
    Nr[:, :, 1, 2], Nr[:, :, 1, 4], Nr[:, :, 1, 8], Nr[:, :, 1, 10] = -dH[0] / L, dH[1], -dH[2] / L, dH[3]
    return Nt, Nr


def stiffness(L, E, G, A, Iy, Iz, J):
    """Element stiffness matrices in the element frame.

    All arguments are arrays of shape (n_el,) in SI units; returns (n_el, 12, 12) [N/m, N, N m].
    """
    L, E, G, A, Iy, Iz, J = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (L, E, G, A, Iy, Iz, J)))
    K = np.zeros(L.shape + (12, 12))
    bar = np.array([[1.0, -1.0], [-1.0, 1.0]])
    K[:, np.ix_([0, 6], [0, 6])[0], np.ix_([0, 6], [0, 6])[1]] = (E * A / L)[:, None, None] * bar
    K[:, np.ix_([3, 9], [3, 9])[0], np.ix_([3, 9], [3, 9])[1]] = (G * J / L)[:, None, None] * bar
    l = L[:, None, None]
    one = np.ones_like(l)
    # Bending in x–y: dofs (v1, theta_z1, v2, theta_z2); in x–z the rotation signs flip.
    kb = np.block([[12 * one, 6 * l, -12 * one, 6 * l],
                   [6 * l, 4 * l**2, -6 * l, 2 * l**2],
                   [-12 * one, -6 * l, 12 * one, -6 * l],
                   [6 * l, 2 * l**2, -6 * l, 4 * l**2]])
    flip = np.array([1.0, -1.0, 1.0, -1.0])
    ixy = np.ix_([1, 5, 7, 11], [1, 5, 7, 11])
    ixz = np.ix_([2, 4, 8, 10], [2, 4, 8, 10])
    K[:, ixy[0], ixy[1]] = (E * Iz / L**3)[:, None, None] * kb
    K[:, ixz[0], ixz[1]] = (E * Iy / L**3)[:, None, None] * kb * np.outer(flip, flip)
    return K


def rotation_12(R_BE):
    """Block-diagonal dof rotation ``q_body = T @ q_local``.  (n_el, 3, 3) -> (n_el, 12, 12)."""
    n_el = R_BE.shape[0]
    T = np.zeros((n_el, 12, 12))
    for k in range(4):
        T[:, 3 * k:3 * k + 3, 3 * k:3 * k + 3] = R_BE
    return T
