"""The version of switchyard_client: the project's (the top CMakeLists.txt's `project(... VERSION ...)`; a test
checks that the two agree)."""
__version__ = "0.1.0"
