package views

// TokensView is the API tokens page: the signed-in user's tokens, or every
// user's for an admin.
type TokensView struct {
	Tokens []TokenRow
	// AllUsers is set for an admin, whose list shows every user's tokens.
	AllUsers bool
	// Created is the token just made, with its secret, shown this once.
	Created *CreatedToken
	// Error says why a token was not made.
	Error string
	// Name is what was typed as the new token's name.
	Name string
}

// TokenRow is one token in the list.
type TokenRow struct {
	ID                        int64
	Name, User, Hint, Created string
	// LastUsed is empty for a token never used.
	LastUsed string
	// Revoked is when the token was revoked, empty while it works.
	Revoked string
}

// CreatedToken is a token just made and its secret.
type CreatedToken struct {
	Name, Secret string
}
