include(CMakePackageConfigHelpers)
install(TARGETS convkit_shared convkit_static convkit_static_whole EXPORT convkitTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/convkit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/convkit/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/convkit)
install(EXPORT convkitTargets NAMESPACE convkit::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convkit)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/convkitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/convkitConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convkit)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/convkitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/convkitConfig.cmake ${PROJECT_BINARY_DIR}/convkitConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convkit)
# For builds without CMake; relocatable (see the file): the way up from
# LIBDIR/pkgconfig to the prefix, "../.." or, for a multiarch LIBDIR, "../../..".
file(RELATIVE_PATH convkit_pc_to_prefix /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
# A sanitized build says what its CMake target says (src/CMakeLists.txt): the
# application links the ASan/UBSan runtime, which must be loaded first.
set(convkit_pc_sanitizer_libs "")
if(CONVKIT_SANITIZE)
  set(convkit_pc_sanitizer_libs " -fsanitize=address,undefined")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/convkit.pc.in ${PROJECT_BINARY_DIR}/convkit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/convkit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
