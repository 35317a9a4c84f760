"""Stands in for SkyRL's entrypoint in tests: prints the arguments it was started with."""

import json
import sys

print(json.dumps(sys.argv[1:]))
