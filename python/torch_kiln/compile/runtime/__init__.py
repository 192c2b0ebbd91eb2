"""Stage 3 of the kiln backend: compiled programs called, and counted.

  program_function  after a graph's first calls, its calls go to kiln's C++
                    program function instead of AOTAutograd's Python wrapper
  statistics        the counters of torch_kiln.compile_stats()

Importing this package imports nothing: statistics needs no Dynamo, so
torch_kiln.compile_stats() does not load it.
"""
