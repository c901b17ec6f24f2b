# Debian's SystemC 2.3.4 is built for C++17; its headers pick an ABI-tagged
# symbol from SC_CPLUSPLUS, so every target that includes them must see the
# C++17 value even though the project compiles as C++20.
function(tpusim_use_systemc target)
  target_link_libraries(${target} PUBLIC PkgConfig::SYSTEMC)
  target_compile_definitions(${target} PUBLIC SC_CPLUSPLUS=201703L)
endfunction()

# Generates C++ from .proto files (given relative to the current source
# directory) into build/proto/<path from the project root>, so that code
# includes them as "configs/hardware.pb.h", and wraps them in a library.
function(tpusim_proto_library target)
  cmake_parse_arguments(ARG "" "" "PROTOS" ${ARGN})
  set(_out ${PROJECT_BINARY_DIR}/proto)
  set(_sources "")
  foreach(proto IN LISTS ARG_PROTOS)
    set(_abs ${CMAKE_CURRENT_SOURCE_DIR}/${proto})
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${_abs})
    string(REGEX REPLACE "\\.proto$" "" _stem ${_rel})
    add_custom_command(
      OUTPUT ${_out}/${_stem}.pb.cc ${_out}/${_stem}.pb.h
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_out}
      COMMAND protobuf::protoc --cpp_out=${_out} -I ${PROJECT_SOURCE_DIR} -I ${Protobuf_INCLUDE_DIRS} ${_abs}
      DEPENDS ${_abs} protobuf::protoc
      COMMENT "protoc ${_rel}"
      VERBATIM)
    list(APPEND _sources ${_out}/${_stem}.pb.cc)
  endforeach()
  add_library(${target} STATIC ${_sources})
  target_include_directories(${target} PUBLIC ${_out})
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
  # Generated code is not ours to keep warning-free.
  target_compile_options(${target} PRIVATE -w)
endfunction()
