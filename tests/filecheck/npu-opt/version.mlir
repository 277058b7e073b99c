// --version (-v) names this compiler and its version, then the xDSL it runs on.
// RUN: npu-opt --version | filecheck %s
// RUN: npu-opt -v | filecheck %s
// CHECK: npu-opt (npu-compiler) {{[0-9]+\.[0-9]+(\.[0-9]+)?}}, on xDSL {{[0-9.]+}}
