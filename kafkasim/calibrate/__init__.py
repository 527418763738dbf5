"""Calibration: kafkasim's costs fitted to a real cluster's measurements (`kafkasim calibrate`), and the
fitted preset that a scenario then runs with (`kafkasim run --preset`).

- targets.py: the statistics of a result a fit reproduces (the RequestChannel breakdown, client latencies).
- parameters.py: what a fit adjusts, each as the scenario values it sets.
- fit.py: the least-squares fit (scipy.optimize.least_squares) and its uncertainty.
- preset.py: the fitted preset file, and applying one to a scenario.
"""
