"""`minikafka certs create`: a CA and one certificate per node, CN its label and names its hosts, keys private."""

from __future__ import annotations

import stat
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import NameOID

from minikafka.cli import main


def names(path: Path) -> tuple[str, list[str]]:
    certificate = x509.load_pem_x509_certificate(path.read_bytes())
    common_name = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    try:
        alternative = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return str(common_name), []
    return str(common_name), [str(name.value) for name in alternative]


def test_every_node_and_the_admin_get_a_certificate_of_one_ca(tmp_path: Path) -> None:
    directory = tmp_path / "certs"
    argv = [
        "certs",
        "create",
        "--dir",
        str(directory),
        "--controllers",
        "101",
        "--brokers",
        "1,2",
        "--host",
        "localhost",
    ]
    assert main(argv) == 0
    ca = x509.load_pem_x509_certificate((directory / "ca.pem").read_bytes())
    for label in ("controller-101", "broker-1", "broker-2"):
        assert names(directory / f"{label}.pem") == (label, [label, "localhost"])
        issued = x509.load_pem_x509_certificate((directory / f"{label}.pem").read_bytes())
        issued.verify_directly_issued_by(ca)
        assert stat.S_IMODE((directory / f"{label}.key").stat().st_mode) == 0o600
    assert names(directory / "admin.pem") == ("admin", [])

    before = (directory / "ca.pem").read_bytes()
    assert main([*argv, "--if-missing"]) == 0
    assert (directory / "ca.pem").read_bytes() == before  # kept: running nodes trust this CA


def test_bad_node_lists_get_one_line_errors(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    assert main(["certs", "create", "--dir", str(tmp_path), "--controllers", "1", "--brokers", "1"]) == 1
    assert "node id 1 is both a controller and a broker" in capsys.readouterr().err
    assert main(["certs", "create", "--dir", str(tmp_path)]) == 1
    assert "no node given" in capsys.readouterr().err


def test_with_a_ca_dir_the_certificates_directory_holds_nothing_that_can_sign(tmp_path: Path) -> None:
    directory, ca_dir = tmp_path / "certs", tmp_path / "ca"
    argv = ["certs", "create", "--dir", str(directory), "--ca-dir", str(ca_dir), "--brokers", "1"]
    assert main(argv) == 0
    assert sorted(p.name for p in directory.iterdir()) == [
        "admin.key",
        "admin.pem",
        "broker-1.key",
        "broker-1.pem",
        "ca.pem",
    ]
    assert sorted(p.name for p in ca_dir.iterdir()) == ["ca.key", "ca.pem"]
    assert (directory / "ca.pem").read_bytes() == (ca_dir / "ca.pem").read_bytes()
    ca = x509.load_pem_x509_certificate((directory / "ca.pem").read_bytes())
    x509.load_pem_x509_certificate((directory / "broker-1.pem").read_bytes()).verify_directly_issued_by(ca)
    assert stat.S_IMODE((ca_dir / "ca.key").stat().st_mode) == 0o600
