"""Mode tracking by MAC through a crossing."""
import numpy as np

from sim.solvers.tracking import mac, track_modes


def test_tracking_follows_a_crossing():
    # Two shapes whose frequencies cross at s = 0.5; the "ascending" output swaps them there.
    n = 6
    rng = np.random.default_rng(1)
    M = np.diag(rng.uniform(1, 2, n))
    a = np.linalg.qr(rng.normal(size=(n, 3)))[0]
    s_values = np.linspace(0, 1, 11)
    shapes, masses, freqs = [], [], []
    for s in s_values:
        # Slowly rotating shapes (still distinguishable), mass-normalised.
        c, si = np.cos(0.2 * s), np.sin(0.2 * s)
        P = np.column_stack([c * a[:, 0] + si * a[:, 2], a[:, 1], -si * a[:, 0] + c * a[:, 2]])
        P /= np.sqrt(np.einsum("ik,ij,jk->k", P, M, P))
        f = np.array([10 + 10 * s, 15.0, 30.0])          # mode 0 crosses mode 1 at s = 0.5
        o = np.argsort(f)
        shapes.append(P[:, o])
        freqs.append(f[o])
        masses.append(M)
    order, macs = track_modes(shapes, masses)
    # The same from the weighted shapes M_i Phi_{i-1}, M_i Phi_i instead of the masses.
    Phi = np.array(shapes)
    weighted = (np.array(masses)[1:] @ Phi[:-1], np.array(masses)[1:] @ Phi[1:])
    order_w, macs_w = track_modes(shapes, weighted=weighted)
    assert np.array_equal(order_w, order)
    np.testing.assert_allclose(macs_w, macs, rtol=1e-14, atol=1e-15)
    tracked = np.take_along_axis(np.array(freqs), order, axis=1)
    assert np.allclose(tracked[:, 0], 10 + 10 * s_values)
    assert np.allclose(tracked[:, 1], 15.0)
    assert np.all(np.take_along_axis(macs, order[:, None, :], axis=2)[:, [0, 1, 2], [0, 1, 2]] > 0.9)


def test_mass_weighted_mac_is_scale_free():
    rng = np.random.default_rng(2)
    M = np.diag(rng.uniform(1, 5, 4))
    P = rng.normal(size=(4, 2))
    assert np.allclose(np.diag(mac(P, 3.0 * P, M)), 1.0)
    assert np.all(mac(P, P, M) <= 1 + 1e-12)
