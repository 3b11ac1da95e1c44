// What libhdl exports.
//
// libhdl is built with hidden visibility (-fvisibility=hidden) and a linker version script
// (media/libhdl.map) that exports names in namespace hdl and nothing else: the C++ standard
// library's template instantiations, nlohmann-json, TBB and the statically linked CUDA runtime
// stay inside (--exclude-libs,ALL). A process that loads libhdl next to other C++ libraries
// (torch, in the Python package) therefore never binds to libhdl's copies of their symbols.
//
// Every library header brackets its declarations with HDL_API_BEGIN / HDL_API_END, after its
// #include lines, so what a header declares is exported and what a .cc file keeps to itself
// (anonymous namespaces, file-local helpers, private operator classes) is not. Third-party
// headers are never included between the two.
#pragma once

#define HDL_API_BEGIN _Pragma("GCC visibility push(default)")
#define HDL_API_END _Pragma("GCC visibility pop")
