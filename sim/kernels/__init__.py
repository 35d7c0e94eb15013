"""Compiled physics kernels: pure functions over arrays (numba), no solver, no model object.

Each equation of the model lives here once; :mod:`sim.dynamics` and :mod:`sim.fast` allocate
and call them.
"""
