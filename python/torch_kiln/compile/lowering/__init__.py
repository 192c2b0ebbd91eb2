"""Stage 2 of the kiln backend: a core ATen FX graph becomes a Kiln program.

  graph_lowering  walks the graph once and describes it for the C++ graph
                  compiler (torch_kiln._C._Program): pointwise ops and
                  reductions as element expressions it fuses, every other op
                  as an extern call of Kiln's kernel for it
  pointwise       pointwise ATen ops as element expressions
  reductions      reductions as a folded element value and an epilogue
  fragments       the fragment dialect both write (Kiln IR element expressions)
  program_cache   lowered graphs on disk (KILN_CACHE_DIR/programs), so a
                  later process skips the lowering
"""
