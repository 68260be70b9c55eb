"""The one C extension; everything else is in pyproject.toml."""

from setuptools import Extension, setup

# The record walk every append makes (leader and follower), in C. Optional: where no C compiler is found the
# install goes on, and the same walk runs in Python (slower, the same answers).
setup(
    ext_modules=[
        Extension("minikafka.common._record_walk", ["src/minikafka/common/_record_walk.c"], optional=True),
    ]
)
