package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code rediss://}: TLS to a Redis whose certificate the test made (keytool, no openssl needed). A
 * JVM that trusts it joins the fleet; one that does not says so and limits locally. Each runs in
 * its own JVM, as the trust store is a JVM-wide setting.
 */
@Timeout(90)
class FleetTlsTest {
  private static final char[] STORE_PASSWORD = "changeit".toCharArray();

  private static Path dir;
  private static int tlsPort;
  private static RedisServerProcess redis;

  @BeforeAll
  static void startRedisWithTls() throws Exception {
    dir = Files.createTempDirectory(Paths.get("target"), "tls-");
    Path serverStore = dir.resolve("server.p12");
    run(
        Paths.get(System.getProperty("java.home"), "bin", "keytool").toString(),
        "-genkeypair",
        "-alias",
        "redis",
        "-keyalg",
        "EC",
        "-groupname",
        "secp256r1",
        "-dname",
        "CN=localhost",
        "-ext",
        "SAN=ip:127.0.0.1,dns:localhost",
        "-validity",
        "2",
        "-keystore",
        serverStore.toString(),
        "-storetype",
        "PKCS12",
        "-storepass",
        new String(STORE_PASSWORD));
    KeyStore server = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(serverStore)) {
      server.load(in, STORE_PASSWORD);
    }
    PrivateKey key = (PrivateKey) server.getKey("redis", STORE_PASSWORD);
    Certificate cert = server.getCertificate("redis");
    Path keyPem = dir.resolve("redis.key");
    Path certPem = dir.resolve("redis.crt");
    Files.write(keyPem, pem("PRIVATE KEY", key.getEncoded()));
    Files.write(certPem, pem("CERTIFICATE", cert.getEncoded()));
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("redis", cert);
    try (OutputStream out = Files.newOutputStream(dir.resolve("trust.p12"))) {
      trust.store(out, STORE_PASSWORD);
    }

    tlsPort = RedisServerProcess.freePort();
    redis =
        RedisServerProcess.start(
            null,
            Arrays.asList(
                "--tls-port",
                Integer.toString(tlsPort),
                "--tls-cert-file",
                certPem.toAbsolutePath().toString(),
                "--tls-key-file",
                keyPem.toAbsolutePath().toString(),
                "--tls-ca-cert-file",
                certPem.toAbsolutePath().toString(),
                "--tls-auth-clients",
                "no"));
  }

  @AfterAll
  static void stopRedis() throws Exception {
    redis.close();
  }

  @Test
  void aJvmThatTrustsTheCertificateJoinsTheFleetOverTls() throws Exception {
    String out =
        probe(
            "-Djavax.net.ssl.trustStore=" + dir.resolve("trust.p12").toAbsolutePath(),
            "-Djavax.net.ssl.trustStorePassword=" + new String(STORE_PASSWORD));

    assertThat(out).contains("state=UP wait=0 redisCalls=1 fallbacks=0");
  }

  @Test
  void aJvmThatDoesNotTrustItSaysSoOnceAndLimitsLocally() throws Exception {
    String out = probe();

    assertThat(out).contains("state=DOWN wait=0 redisCalls=0 fallbacks=1");
    assertThat(out).contains("rediss://127.0.0.1:" + tlsPort + " is unreachable");
    assertThat(out.split("retry-agent: fleet:", -1)).hasSize(2);
  }

  private static String probe(String... jvmOptions) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(Arrays.asList(jvmOptions));
    cmd.addAll(
        Arrays.asList(
            "-cp",
            System.getProperty("java.class.path"),
            TlsProbe.class.getName(),
            "rediss://127.0.0.1:" + tlsPort));
    return run(cmd.toArray(new String[0]));
  }

  private static String run(String... cmd) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (InputStream in = p.getInputStream()) {
      in.transferTo(out);
    }
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    String text = out.toString(StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(text).isZero();
    return text;
  }

  private static byte[] pem(String type, byte[] der) {
    String body =
        Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
    return ("-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n")
        .getBytes(StandardCharsets.US_ASCII);
  }
}
