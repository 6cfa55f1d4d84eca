# The cpu backend is built once per x86-64 ISA level and picks one at run time
# (src/cpu/cpu_isa.h, docs/cpu-isa.md), as oneDNN, OpenBLAS and ggml do.
#
# convkit_isa_variants(NAME SOURCES file... LINK target...)
#   compiles SOURCES once per ISA of CONVKIT_CPU_ISAS, each with that ISA's
#   flags and CONVKIT_ISA_NS=isa_<isa>, the namespace its code lives in, and
#   appends one object per ISA to the packaged libraries' objects.
#
# Why one object per ISA, and not the compiled files themselves: templates
# that every copy instantiates (std::vector, Eigen's GEMM, our own headers'
# inline functions) have one name but, per ISA, different code. The linker
# would keep one copy for all, so the baseline path could run AVX-512
# instructions (SIGILL) or the AVX2 path baseline ones (slow). Each ISA's
# objects are therefore linked into one relocatable object whose section
# groups are dissolved (ld -r --force-group-allocation), and every symbol
# outside the namespace isa_<isa> is made local (objcopy): each ISA keeps
# private copies, and only its entry points are seen by the rest.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(CONVKIT_CPU_ISAS baseline avx2 avx512)
else()
  set(CONVKIT_CPU_ISAS baseline)
endif()
# x86-64-v3 is AVX2 + FMA (+ BMI1/2, F16C, LZCNT, MOVBE); x86-64-v4 adds
# AVX-512 F/BW/CD/DQ/VL. The AVX-512 copy keeps the tuning -march=native gave
# on the Xeons the kernels were tuned on (256-bit auto-vectorization; the tap
# kernels' zmm tiles are intrinsics).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(convkit_isa_flags_baseline -march=x86-64 -mtune=generic)
  set(convkit_isa_flags_avx2 -march=x86-64-v3 -mtune=generic)
  set(convkit_isa_flags_avx512 -march=x86-64-v4 -mtune=skylake-avx512)
else()
  set(convkit_isa_flags_baseline "")
endif()
find_program(CONVKIT_OBJCOPY NAMES ${CMAKE_OBJCOPY} objcopy REQUIRED)
find_program(CONVKIT_LD NAMES ld.bfd ld REQUIRED)

function(convkit_isa_variants name)
  cmake_parse_arguments(arg "" "" "SOURCES;LINK" ${ARGN})
  foreach(isa IN LISTS CONVKIT_CPU_ISAS)
    set(objects convkit_${name}_${isa})
    add_library(${objects} OBJECT ${arg_SOURCES})
    # GCC gives the static locals of inline functions (Eigen's cache sizes,
    # say) "unique" binding, which no objcopy option makes local; weak
    # binding, like clang's, can be.
    target_compile_options(${objects} PRIVATE ${convkit_isa_flags_${isa}} $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
    target_compile_definitions(${objects} PRIVATE CONVKIT_ISA_NS=isa_${isa})
    target_link_libraries(${objects} PRIVATE ${arg_LINK})
    string(LENGTH "isa_${isa}" length)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/${objects}.o)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CONVKIT_LD} -r --force-group-allocation -o ${out}.r.o $<TARGET_OBJECTS:${objects}>
      # Mangled, the namespace is convkit::cpu::isa_<isa>: "7convkit3cpu<length>isa_<isa>".
      COMMAND ${CONVKIT_OBJCOPY} --wildcard "--keep-global-symbol=*7convkit3cpu${length}isa_${isa}*"
              ${out}.r.o ${out}
      DEPENDS $<TARGET_OBJECTS:${objects}>
      COMMAND_EXPAND_LISTS VERBATIM
      COMMENT "Making ${objects}'s shared code private to it")
    set_property(GLOBAL APPEND PROPERTY convkit_layer_objects ${out})
  endforeach()
endfunction()
