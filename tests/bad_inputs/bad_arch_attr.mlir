// An arch attribute with zero cores.
builtin.module attributes {npu.arch = #npu.arch<cores = 0>} {
}
