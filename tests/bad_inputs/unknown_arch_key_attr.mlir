// An arch attribute with a parameter no NPU of the family has.
builtin.module attributes {npu.arch = #npu.arch<cores = 2, tensor_cores = 1>} {
}
