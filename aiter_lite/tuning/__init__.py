"""Tuning helpers: device models (hardware), the matmul tile planner (planner), the kernels'
tile-config table (matmul_configs) and the opt-in autotuner (autotune). Pure Python; nothing here
imports torch at import time."""
