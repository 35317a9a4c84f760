"""Models of what a run will take or where it will land, for the rules to judge: GPU memory per
phase (`gpu_memory`, the formulas of docs/memory.md) and where Ray places SkyRL's placement
groups (`placement`). They hold no rules and report no findings."""
