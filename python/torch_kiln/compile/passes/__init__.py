"""Stage 1 of the kiln backend: graph rewrites before lowering.

They change what the graph computes into something Kiln's kernels run
faster, with the same values (or the same up to rounding, where a module
says so):

  inference_folding  on Dynamo's graph of an inference graph: batch norm
                     folded into the convolution before it, ReLU and bias
                     moved after the max pool
  channels_last      on Dynamo's graph of an inference graph: 2-d
                     convolutions read their input and weight channels-last
  decompositions     the decompositions AOTAutograd applies when it makes
                     the forward and backward graphs in core ATen (with
                     foreach: foreach ops split per tensor, so they fuse)
  small_products     on AOTAutograd's inference graph, just before it is
                     lowered: small mm/bmm become generated reductions
"""
