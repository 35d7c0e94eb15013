r"""Section forces and stresses of the flexible bodies, from their elastic coordinates.

Each element's end forces in its own frame are ``f = K_e T^T d_e``: the element stiffness
(:func:`sim.model.beam.stiffness`) times its nodal displacements ``d_e`` (12,) in the body frame
(``d = B q_f``, ``B`` the body's basis of its elastic coordinates) turned into the element frame.
``f`` is the load the nodes put on the element, so the section resultants -- the force and
moment that the part of the beam beyond a section (larger local ``x``) exerts on the part before
it, on the face whose outward normal is ``+x`` -- are ``S = f[6:]`` at the element's second
node and ``S = -f[:6]`` at its first.  Components ``(N, Vy, Vz, T, My, Mz)`` in the element
frame (x along the element, y and z the section's principal axes): ``N > 0`` in tension, and
the normal stress at a point ``(y, z)`` of the section is

    sigma = N / A + My z / Iy - Mz y / Iz.

A cantilever along x loaded by ``P`` along z at its tip has ``Vz = P`` and ``My = -P (L - x)``.

At a node shared by several elements the value is the mean of theirs, each turned into the
frame of the node's first element (sign reversed for an element that points back): the force
and moment transmitted through a node are the same on both sides when no load acts there, so
the mean differs from either only by the node's share of the distributed (inertia, gravity)
loads.

Stresses (per node, with the section of the node's first element, :attr:`Section.fibres`):
the largest normal stress ``|N|/A + |My| c_z/Iy + |Mz| c_y/Iz`` (a rectangle's corner; for a
round section ``|N|/A + sqrt(My^2 + Mz^2) c / I``), the largest torsion stress ``|T| / W_t``,
and the von Mises stress ``sqrt(sigma^2 + 3 tau^2)`` of the two together -- exact for round
sections (both peak on the rim), an upper bound for rectangles.  The transverse shear
(``Vy``, ``Vz``) is left out: it vanishes at the extreme fibres, and in slender
Euler-Bernoulli beams it is small beside the bending stress.
"""
import numpy as np

from sim.model.beam import rotation_12

COMPONENTS = ("N", "Vy", "Vz", "T", "My", "Mz")
UNITS = ("N", "N", "N", "N m", "N m", "N m")


def _ends(body):
    """The averaging of the element ends onto the nodes: ``P`` (n_nodes, 2 n_el) and the
    rotations ``R`` (2 n_el, 3, 3) from each end's element frame into its node's frame (that
    of the node's first element, sign included); and that first element per node (n_nodes,)."""
    el, R_BE = body.elements, body.element_frames
    n_nodes = len(body.nodes_B)
    nodes = el.T.ravel()                                  # first nodes of all elements, then second nodes
    owner = np.tile(np.arange(len(el)), 2)
    first = np.full(n_nodes, -1)
    for e in range(len(el) - 1, -1, -1):
        first[el[e]] = e
    ref = R_BE[first[nodes]]                              # (2 n_el, 3, 3) the node's frame
    sign = np.sign(np.einsum("pa,pa->p", ref[:, :, 0], R_BE[owner][:, :, 0]))
    R = np.einsum("pba,pbc->pac", ref, R_BE[owner]) * np.where(sign == 0, 1.0, sign)[:, None, None]
    P = np.zeros((n_nodes, nodes.size))
    P[nodes, np.arange(nodes.size)] = 1.0
    P /= np.maximum(P.sum(axis=1, keepdims=True), 1.0)
    return P, R, first


def section_forces(body, u_f):
    """Section forces ``(N, Vy, Vz, T, My, Mz)`` at each node (see the module docstring).

    Parameters
    ----------
    body : Body
        A flexible body.
    u_f : ndarray, shape (..., n_f)
        Its elastic coordinates.

    Returns
    -------
    ndarray, shape (..., n_nodes, 6)
        [N, N m], in the section frame of the node's first element.
    """
    d = body.basis.apply(u_f)                                            # (..., 6 n_nodes) body frame
    dofs = (6 * body.elements[:, :, None] + np.arange(6)).reshape(-1, 12)
    T = rotation_12(body.element_frames)
    # f_e = K_e T_e^T d_e, as the row d_e^T (T_e K_e^T): one batched product over the elements
    f = (d[..., dofs][..., None, :] @ (T @ np.swapaxes(body.element_stiffness, -1, -2)))[..., 0, :]
    S = np.concatenate([-f[..., :6], f[..., 6:]], axis=-2)              # (..., 2 n_el, 6): first, second ends
    P, R, _ = _ends(body)
    Rt = np.swapaxes(R, -1, -2)
    turned = np.concatenate([(S[..., None, :3] @ Rt)[..., 0, :], (S[..., None, 3:] @ Rt)[..., 0, :]], axis=-1)
    return P @ turned


def stresses(body, forces):
    """Largest normal and von Mises stress in the section at each node (see the module docstring).

    Parameters
    ----------
    body : Body
    forces : ndarray, shape (..., n_nodes, 6)
        :func:`section_forces`.

    Returns
    -------
    normal, von_mises : ndarray, shape (..., n_nodes)
        [Pa].
    """
    first = _ends(body)[2]
    sec = [body.sections[e] for e in first]
    A, Iy, Iz = (np.array([getattr(s, k) for s in sec]) for k in ("A", "Iy", "Iz"))
    c_y, c_z, W_t = np.array([s.fibres for s in sec]).T
    round_ = np.array([s.round for s in sec])
    N, T, My, Mz = (forces[..., k] for k in (0, 3, 4, 5))
    bending = np.where(round_, np.hypot(My, Mz) * c_z / Iy, np.abs(My) * c_z / Iy + np.abs(Mz) * c_y / Iz)
    normal = np.abs(N) / A + bending
    tau = np.abs(T) / W_t
    return normal, np.sqrt(normal**2 + 3 * tau**2)


def body_forces(model, u):
    """Section forces of every flexible body from displacements ``u`` (..., n_v) in the velocity
    coordinates (their elastic part; :func:`elastic_displacements` of configurations).

    Returns
    -------
    dict
        Body name -> ndarray (..., n_nodes, 6).
    """
    return {model.bodies[b].name: section_forces(model.bodies[b], u[..., model.v_slice(b)][..., 6:])
            for b in flexible_bodies(model)}


def flexible_bodies(model):
    """Indices of the beam bodies (elastic coordinates and elements)."""
    return [b for b, body in enumerate(model.bodies) if body.n_f and len(body.element_stiffness)]


def elastic_displacements(model, q):
    """The elastic coordinates of configurations ``q`` (..., n_q) in velocity-coordinate slots:
    (..., n_v), zero on the reference coordinates (what :func:`body_forces` reads)."""
    q = np.asarray(q, dtype=float)
    u = np.zeros(q.shape[:-1] + (model.n_v,))
    u[..., model.v_elastic] = q[..., model.q_elastic]
    return u
