# The layers of docs/architecture.md, enforced by the compiler, in the spirit
# of Bazel's layering_check. Each layer's sources compile against a private
# include tree that holds only its own headers and those of the layers it
# may use: configure creates, under build/<preset>/layers/<layer>/, symbolic
# links to the layer's headers at their usual paths (include/convkit/...,
# src/<dir>/..., kernels/...). So an include that crosses a forbidden edge is
# "No such file or directory", whoever writes it, and tests/layering proves it.
#
# convkit_layer(NAME [HEADERS glob...] [EXCLUDE file...] [SOURCES file...] [DEPS layer...])
#   HEADERS  globs (recursive, relative to the source root) of the headers the
#            layer owns; EXCLUDE drops files (relative paths) from them.
#   SOURCES  the layer's source files; none makes a header-only layer.
#   DEPS     the layers it may include, which must already be declared. What
#            they may include it may include too (PUBLIC links).
# It defines convkit_layer_NAME_headers, an INTERFACE target carrying the
# include tree, and with SOURCES convkit_layer_NAME, an OBJECT library of them.
# The packaged libraries take the layers' objects (src/CMakeLists.txt).
function(convkit_layer name)
  cmake_parse_arguments(arg "" "" "HEADERS;EXCLUDE;SOURCES;DEPS" ${ARGN})
  set(stage ${PROJECT_BINARY_DIR}/layers/${name})
  # Rebuilt at every configure, so a header that moved to another layer or
  # was deleted leaves no stale link behind.
  file(REMOVE_RECURSE ${stage})
  set(headers "")
  foreach(pattern IN LISTS arg_HEADERS)
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${pattern})
    list(APPEND headers ${found})
  endforeach()
  foreach(excluded IN LISTS arg_EXCLUDE)
    list(REMOVE_ITEM headers ${PROJECT_SOURCE_DIR}/${excluded})
  endforeach()
  set(roots "")
  foreach(header IN LISTS headers)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${header})
    if(rel MATCHES "^include/(.*)$")
      set(root include)
      set(path ${CMAKE_MATCH_1})
    elseif(rel MATCHES "^src/(.*)$")
      set(root src)
      set(path ${CMAKE_MATCH_1})
    else()  # kernels/...: included by its path from the source root
      set(root root)
      set(path ${rel})
    endif()
    get_filename_component(dir ${stage}/${root}/${path} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${header} ${stage}/${root}/${path} SYMBOLIC)
    list(APPEND roots ${stage}/${root})
  endforeach()
  list(REMOVE_DUPLICATES roots)

  add_library(convkit_layer_${name}_headers INTERFACE)
  if(roots)
    target_include_directories(convkit_layer_${name}_headers INTERFACE ${roots})
  endif()
  foreach(dep IN LISTS arg_DEPS)
    if(NOT TARGET convkit_layer_${dep}_headers)
      message(FATAL_ERROR "convkit_layer(${name}): layer '${dep}' is not declared (declare a layer after its DEPS)")
    endif()
    target_link_libraries(convkit_layer_${name}_headers INTERFACE convkit_layer_${dep}_headers)
  endforeach()
  set_property(GLOBAL APPEND PROPERTY convkit_layers ${name})

  if(arg_SOURCES)
    add_library(convkit_layer_${name} OBJECT ${arg_SOURCES})
    target_link_libraries(convkit_layer_${name} PUBLIC OpenMP::OpenMP_CXX Threads::Threads
                          PRIVATE convkit_layer_${name}_headers convkit_warnings)
    set_property(GLOBAL APPEND PROPERTY convkit_layer_objects $<TARGET_OBJECTS:convkit_layer_${name}>)
  endif()
endfunction()
