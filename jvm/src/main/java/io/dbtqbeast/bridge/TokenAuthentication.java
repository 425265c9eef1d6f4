package io.dbtqbeast.bridge;

import javax.security.sasl.AuthenticationException;

import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/**
 * The Thrift JDBC/ODBC server's check of a client's password against the server's shared secret
 * (Hive's CUSTOM authentication: beeline {@code -n USER -p TOKEN}, PyHive
 * {@code auth='CUSTOM', password=TOKEN}). The user name is free: it only names the session.
 */
public final class TokenAuthentication implements PasswdAuthenticationProvider {
  public TokenAuthentication() {
  }

  @Override
  public void Authenticate(String user, String password) throws AuthenticationException {
    if (!SharedSecret.matches(password)) {
      throw new AuthenticationException(
        "qbeast serve requires its token as the password (user " + user + ")");
    }
  }
}
