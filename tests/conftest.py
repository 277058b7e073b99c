"""Every test run simulates with the memory sanitizer on (`sim.sanitizer`): a
read that does not find the value it names fails the test."""

import os

os.environ["NPU_SANITIZE"] = "1"
