"""Tuning helpers: device models (hardware), the matmul tile planner (planner) and the kernels'
tile-config table (matmul_configs). Pure Python; nothing here imports torch at import time."""
