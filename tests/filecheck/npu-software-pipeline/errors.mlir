// npu-software-pipeline has no options: a misspelt one is a usage error (exit 2) naming the pass.
// RUN: not npu-opt %s -p 'npu-software-pipeline{depth=2}' 2>&1 | filecheck %s
// CHECK: error: pass 'npu-software-pipeline' has no option 'depth'

builtin.module {
}
