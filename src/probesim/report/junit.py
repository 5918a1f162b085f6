"""JUnit XML, the one writer: test cases with their failures, as CI systems (Jenkins, GitLab,
GitHub's test reporters) read them. probesim check and probesim run's thresholds use it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

# Characters XML 1.0 cannot hold (JUnit must stay well-formed whatever names hold).
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def xml_text(text: str) -> str:
    """``text`` with the characters XML cannot hold written as escapes (``\\x1b``)."""
    return _XML_BAD.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


@dataclass
class Failure:
    message: str
    type: str
    text: str


@dataclass
class Case:
    classname: str
    name: str
    failures: list[Failure] = field(default_factory=list)
    errors: list[Failure] = field(default_factory=list)  # the case could not run (input errors)


def junit_xml(suite_name: str, cases: Sequence[Case], system_out: str | None = None) -> str:
    """One test suite of ``cases`` in a testsuites root, counts on both."""
    # Loaded here: every probesim run imports this module (its thresholds), few write JUnit.
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name=xml_text(suite_name))
    failures = errors = 0
    for c in cases:
        case = ET.SubElement(suite, "testcase", classname=xml_text(c.classname), name=xml_text(c.name))
        for f in c.failures:
            failures += 1
            fail = ET.SubElement(case, "failure", message=xml_text(f.message), type=xml_text(f.type))
            fail.text = xml_text(f.text)
        for f in c.errors:
            errors += 1
            error = ET.SubElement(case, "error", message=xml_text(f.message), type=xml_text(f.type))
            error.text = xml_text(f.text)
    if system_out is not None:
        out = ET.SubElement(suite, "system-out")
        out.text = xml_text(system_out)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    root = ET.Element("testsuites", tests=str(len(cases)), failures=str(failures), errors=str(errors))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
