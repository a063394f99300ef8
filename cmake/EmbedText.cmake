# Writes a C++ source that defines `const char* const NAME` in namespace NAMESPACE holding the text of
# INPUT, as a raw string literal; OUTPUT is rewritten only when its content changes.
#   cmake -DINPUT=page.html -DOUTPUT=page.cc -DNAMESPACE=proximity::server -DNAME=kViewerPage -P EmbedText.cmake
file(READ "${INPUT}" text)
set(delimiter "PROXTEXT")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter )${delimiter}\"")
endif()
set(source "// Generated from ${INPUT} by cmake/EmbedText.cmake; edit that file instead.\n")
string(APPEND source "namespace ${NAMESPACE} {\nextern const char* const ${NAME};\n")
string(APPEND source "const char* const ${NAME} = R\"${delimiter}(${text})${delimiter}\";\n}  // namespace ${NAMESPACE}\n")
file(WRITE "${OUTPUT}.tmp" "${source}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
